"""Where the database is: what `CTXKEEP_DB` may name, and how a location is shown to people.

Standard library only: the per-event hooks read `CTXKEEP_DB` too.
"""

from __future__ import annotations

import re
from pathlib import Path

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
# libpq's keywords whose values are secrets, in a URL's query (`?password=…`, `&sslpassword=…`)
_QUERY_SECRET = re.compile(r"(?i)([?&](?:ssl)?password=)[^&]*")
_QUERY_VALUE = re.compile(r"(?i)[?&]((?:ssl)?password)=([^&]*)")


def is_database_url(location: str) -> bool:
    """Whether a location names a PostgreSQL server (postgresql:// or postgres://) rather than an SQLite file."""
    return location.startswith(POSTGRES_SCHEMES)


def shown_location(location: Path | str) -> str:
    """A database location as messages, logs and `ctxkeep stats` show it: a file as it is; a PostgreSQL URL with every
    password replaced by `***`, wherever it stands.

    The user's password runs from the first `:` after the scheme to the last `@`: a password may hold `#`, `/`, `?`
    or `@` unescaped, which a URL parser reads as the start of a fragment, a path or a query (and would show the rest
    of the password as one). A host never holds `@`, so nothing of a password is left after the last one; when an `@`
    stands in the query, more than the password is hidden, never less. `password=` and `sslpassword=` in the query
    (a form libpq documents) are hidden too."""
    text = str(location)
    if not is_database_url(text):
        return text
    scheme, _, rest = text.partition("://")
    credentials, at, place = rest.rpartition("@")
    if at and ":" in credentials:
        credentials = credentials.split(":", 1)[0] + ":***"
    return _QUERY_SECRET.sub(r"\1***", f"{scheme}://{credentials}{at}{place}")


def scrubbed(message: str, url: str) -> str:
    """A driver's message about `url` with the URL's secrets (the user's password, `password=` values in the query,
    and every piece of them between `#`, `/`, `?`, `@` or `:`, as a URL parser splits them) replaced by `***`."""
    secrets = [value for _, value in _QUERY_VALUE.findall(url)]
    credentials, at, _ = url.partition("://")[2].rpartition("@")
    if at and ":" in credentials:
        secrets.append(credentials.split(":", 1)[1])
    pieces = {piece for secret in secrets for piece in [secret, *re.split(r"[#/?@:&]", secret)] if len(piece) >= 3}
    for piece in sorted(pieces, key=len, reverse=True):
        message = message.replace(piece, "***")
    return message
