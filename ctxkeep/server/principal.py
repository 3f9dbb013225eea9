"""Who a shared server's request comes from: the user of its token and the project it works in.

Set by the HTTP middleware (`http_users`) for the request's duration; the SDK runs each message's handler with the
context of the request that carried it, so `Runtime.get()` gives every tool call a scope of that project, writing as
that user, and reading no file where the server runs (`Scope.local_files`). Unset (None) over stdio and with the single
loopback token: the server's own project, no user.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, replace

from ctxkeep.tools.scope import Scope


@dataclass(frozen=True)
class Principal:
    user: str
    project: str


PRINCIPAL: ContextVar[Principal | None] = ContextVar("ctxkeep_principal", default=None)


def scoped(scope: Scope) -> Scope:
    """The scope for the current request: its user's project and name when a user token authenticated it."""
    principal = PRINCIPAL.get()
    if principal is None:
        return scope
    return replace(scope, project=principal.project, user=principal.user, local_files=False)
