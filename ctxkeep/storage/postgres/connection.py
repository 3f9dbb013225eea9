"""The driver's connection types, named once for the modules that run statements (no import of the session)."""

from __future__ import annotations

from typing import TypeAlias

import asyncpg
from asyncpg.pool import PoolConnectionProxy

Conn: TypeAlias = "asyncpg.Connection[asyncpg.Record] | PoolConnectionProxy[asyncpg.Record]"
Pooled: TypeAlias = "PoolConnectionProxy[asyncpg.Record]"
