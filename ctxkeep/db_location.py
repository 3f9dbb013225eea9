"""Where the database is: what `CTXKEEP_DB` may name, and how a location is shown to people.

Standard library only: the per-event hooks read `CTXKEEP_DB` too.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # pathlib costs a hook process ~4 ms (urllib.parse, ipaddress): imported where a Path is made
if TYPE_CHECKING:
    from pathlib import Path


POSTGRES_SCHEMES = ("postgresql://", "postgres://")
DEFAULT_DB_TIMEOUT_MS = 10_000  # CTXKEEP_DB_TIMEOUT_MS: a statement, a wait for a connection, a connection attempt
# libpq's keywords whose values are secrets, in a URL's query (`?password=…`, `&sslpassword=…`)
# (patterns as strings: `re` compiles each the first time it is used, and the hooks import this module)
_QUERY_SECRET = r"(?i)([?&](?:ssl)?password=)[^&]*"
_QUERY_VALUE = r"(?i)[?&]((?:ssl)?password)=([^&]*)"
_SCHEME = r"([A-Za-z][A-Za-z0-9+.-]*):"
_WHAT_TO_SEND = (
    "send the path of an SQLite file in an existing folder (/home/me/ctxkeep.db; sqlite:///relative.db and "
    "sqlite:////absolute/path.db name one too), or a PostgreSQL URL (postgresql://user:password@host:5432/database); "
    "unset, ctxkeep uses {default}"
)


class LocationError(ValueError):
    """CTXKEEP_DB names no place a database can be; the message says what to send instead. (Settings raises it as
    ctxkeep.errors.InvalidInput; this module stays free of imports the hooks' fast path would pay for.)"""


def database_location(value: str | None, default: Path) -> Path | str:
    """Where CTXKEEP_DB says the database is: a PostgreSQL URL as it is; an SQLite file (a path, `~` expanded, or a
    `sqlite:///` URL read as SQLAlchemy reads it: sqlite:///x.db is x.db, sqlite:////abs/x.db is /abs/x.db) whose
    folder exists; `default` when unset or empty (its folders are created when the file is). Creates nothing.

    Raises LocationError for another scheme (mysql://, file:, postgresql+asyncpg://), a sqlite URL that names no
    file, or a folder that does not exist: a typo must not make folders, nor a folder named `sqlite:`."""
    from pathlib import Path

    if not value:
        return default
    if is_database_url(value):
        return value
    scheme = re.match(_SCHEME, value)
    if scheme and not re.match(r"[A-Za-z]:[\\/]", value):  # (a Windows drive is a path, not a scheme)
        if scheme.group(1).lower() != "sqlite":
            raise LocationError(
                f"CTXKEEP_DB={shown_location(value)!r} is not a database location ({scheme.group(1)}: is neither an "
                f"SQLite file nor PostgreSQL); " + _WHAT_TO_SEND.format(default=default)
            )
        path = _sqlite_path(value, default)
    else:
        path = Path(value).expanduser()
    if path == default:
        return path
    folder = path.parent
    if not folder.is_dir():
        problem = "is not a folder" if folder.exists() else "does not exist"
        raise LocationError(
            f"CTXKEEP_DB={str(path)!r}: the folder {folder} {problem}; create it first (mkdir -p {folder}), or "
            + _WHAT_TO_SEND.format(default=default)
        )
    return path


def _sqlite_path(url: str, default: Path) -> Path:
    """The file a sqlite URL names (three slashes, then the path: relative, or absolute with a fourth slash)."""
    from pathlib import Path
    from urllib.parse import unquote  # here: only a sqlite URL pays for it (the hooks read CTXKEEP_DB too)

    rest = url[len("sqlite:///") :] if url.lower().startswith("sqlite:///") else None
    problem = None
    if rest is None:
        problem = "a sqlite URL names its file after three slashes"
    elif "?" in rest or "#" in rest:
        problem = "a sqlite URL here takes no options (?…)"
    elif not rest or unquote(rest) == ":memory:":
        problem = "it names no file (an in-memory database keeps nothing)"
    if problem or rest is None:
        raise LocationError(f"CTXKEEP_DB={url!r}: {problem}; " + _WHAT_TO_SEND.format(default=default))
    return Path(unquote(rest)).expanduser()


def is_database_url(location: str) -> bool:
    """Whether a location names a PostgreSQL server (postgresql:// or postgres://) rather than an SQLite file."""
    return location.startswith(POSTGRES_SCHEMES)


def shown_location(location: Path | str) -> str:
    """A database location as messages, logs and `ctxkeep stats` show it: a file as it is; a PostgreSQL URL (or any
    other URL, when an error names one) with every password replaced by `***`, wherever it stands.

    The user's password runs from the first `:` after the scheme to the last `@`: a password may hold `#`, `/`, `?`
    or `@` unescaped, which a URL parser reads as the start of a fragment, a path or a query (and would show the rest
    of the password as one). A host never holds `@`, so nothing of a password is left after the last one; when an `@`
    stands in the query, more than the password is hidden, never less. `password=` and `sslpassword=` in the query
    (a form libpq documents) are hidden too."""
    text = str(location)
    if "://" not in text:
        return text
    scheme, _, rest = text.partition("://")
    credentials, at, place = rest.rpartition("@")
    if at and ":" in credentials:
        credentials = credentials.split(":", 1)[0] + ":***"
    return re.sub(_QUERY_SECRET, r"\1***", f"{scheme}://{credentials}{at}{place}")


def scrubbed(message: str, url: str) -> str:
    """A driver's message about `url` with the URL's secrets (the user's password, `password=` values in the query,
    and every piece of them between `#`, `/`, `?`, `@` or `:`, as a URL parser splits them) replaced by `***`."""
    secrets = [value for _, value in re.findall(_QUERY_VALUE, url)]
    credentials, at, _ = url.partition("://")[2].rpartition("@")
    if at and ":" in credentials:
        secrets.append(credentials.split(":", 1)[1])
    pieces = {piece for secret in secrets for piece in [secret, *re.split(r"[#/?@:&]", secret)] if len(piece) >= 3}
    for piece in sorted(pieces, key=len, reverse=True):
        message = message.replace(piece, "***")
    return message
