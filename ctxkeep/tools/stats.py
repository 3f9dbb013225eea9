"""What a project holds: `ctxkeep stats`."""

from __future__ import annotations

from ctxkeep.models.common import Model
from ctxkeep.tools.scope import Scope


class ProjectStats(Model):
    project: str
    database: str
    database_bytes: int
    counts: dict[str, int]


async def project_stats(scope: Scope) -> ProjectStats:
    async with scope.store.snapshot() as tx:
        counts = await tx.stats.counts(scope.project)
        size = await tx.stats.file_bytes()
    return ProjectStats(project=scope.project, database=scope.store.location, database_bytes=size, counts=counts)
