"""Task bundles, for teams without a server: `ctxkeep export TASK` writes one task's whole checkpoint chain, the
evidence its states cite and its history digest as one deterministic JSON file to commit into a repository;
`ctxkeep import BUNDLE` checks it as untrusted input (`bundle_read`) and merges it into this project.

Deterministic: sorted keys, one value per line, no export time, so the same task exports to the same bytes and a
new version shows as a small diff; a bundle imported elsewhere exports again to the same bytes. Each evidence record
names the project its ref was computed in (`ref_project`), so the importer can recompute the ref. Merged only
forward, in one transaction: a bundle whose versions extend this database's adds the new ones; one this database
already holds adds nothing; one whose history differs from this database's at some version is refused, naming that
version and both sides' hashes (the fork), and nothing is written. A bundle's digest is stored only when this
project has none of its own for the task (never over one made here), marked as imported: the working set shows it
quoted under its source, never as checked.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass, field

from ctxkeep.errors import Refused
from ctxkeep.storage import CheckpointRow, EvidenceRow, Tx
from ctxkeep.tools.checkpoint import leases
from ctxkeep.tools.checkpoint.bundle_read import FORMAT, FORMAT_VERSION, read_bundle, sealed
from ctxkeep.tools.checkpoint.versions import load_version
from ctxkeep.tools.scope import Scope

_REF = re.compile(r"^ev_[0-9a-f]{6,24}$")
_VERSION_FIELDS = (
    "version",
    "hash",
    "parent_hash",
    "state_schema",
    "trigger",
    "goal_change_reason",
    "created_at",
    "author",
    "owner",
    "took_over",
)
_EVIDENCE_FIELDS = (
    "ref",
    "kind",
    "source",
    "title",
    "task_id",
    "effective_at",
    "expires_at",
    "created_at",
    "bytes",
    "tokens",
    "lines",
    "chunk_chars",
    "redactions",
    "sha256",
)


@dataclass(frozen=True)
class Imported:
    """What an import did: the versions and evidence records it added, the task's latest version now, and the records
    whose text held a secret (the bundle's ref -> the ref the redacted copy is stored under)."""

    task_id: str
    added_versions: list[int]
    added_evidence: int
    latest_version: int
    latest_hash: str
    redacted_evidence: dict[str, str] = field(default_factory=dict)


def _cited(rows: list[CheckpointRow]) -> list[str]:
    refs: set[str] = set()
    for row in rows:
        state = json.loads(row.state_json)
        named = [*state.get("evidence_refs", []), *(fact.get("source_ref") or "" for fact in state.get("facts", []))]
        refs.update(name for name in named if _REF.match(name))
    return sorted(refs)


async def _evidence(tx: Tx, scope: Scope, refs: list[str]) -> list[EvidenceRow]:
    """The records behind the cited refs (a short ref resolves when unique); missing ones are left out."""
    found = dict(await tx.evidence.rows(scope.project, [r for r in refs if len(r) == 27]))
    for prefix in (r for r in refs if len(r) < 27):
        matches = await tx.evidence.by_prefix(scope.project, prefix)
        if len(matches) == 1:
            found[matches[0].ref] = matches[0]
    return [found[ref] for ref in sorted(found)]


async def export_bundle(scope: Scope, task_id: str) -> str:
    """The task's bundle as text (the same task exports to the same bytes); raises NotFound."""
    async with scope.store.snapshot() as tx:
        await load_version(tx, scope, task_id, None)
        rows = await tx.checkpoints.chain(scope.project, task_id)
        records = await _evidence(tx, scope, _cited(rows))
        blobs = await tx.evidence.blobs([r.blob_id for r in records])
        origins = await tx.evidence.ref_projects(scope.project, [r.ref for r in records])
        digest = await tx.digests.get(scope.project, task_id)
    body = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "task_id": task_id,
        "versions": [
            {
                **{name: getattr(row, name) for name in _VERSION_FIELDS},
                "state": json.loads(row.state_json),
                "violations": json.loads(row.violations_json),
            }
            for row in rows
        ],
        "evidence": [
            {
                **{name: getattr(r, name) for name in _EVIDENCE_FIELDS},
                "ref_project": origins.get(r.ref, scope.project),
                "tags": json.loads(r.tags_json),
                "content": zlib.decompress(blobs[r.blob_id]).decode("utf-8"),
            }
            for r in records
        ],
        "digest": None
        if digest is None
        else {
            "digest": digest.digest,
            "summary": digest.summary,
            "source": digest.source,
            "updated_at": digest.updated_at,
        },
    }
    return json.dumps(sealed(body), sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def _fork(task_id: str, here: CheckpointRow, there: CheckpointRow) -> Refused:
    def side(row: CheckpointRow) -> str:
        return f"{row.hash[:12]} (saved {row.created_at[:19]}{' by ' + row.author if row.author else ''})"

    return Refused(
        f"task {task_id!r} has a diverging history: it forks at version {here.version}: this database has "
        f"{side(here)}, the bundle has {side(there)}; versions 1 to {here.version - 1} are the same. Nothing was "
        "imported: reconcile the two by hand (checkpoint_diff), or import into another project"
    )


async def import_bundle(scope: Scope, text: str) -> Imported:
    """Check a bundle (`bundle_read`) and merge what it adds in one transaction; raises InvalidInput (malformed: one
    line naming where), Refused (changed, a broken chain, a version a save would refuse, a forged ref, a secret in a
    signed version, a diverging history), LeaseHeld (another executor holds the task). Nothing is written on error."""
    bundle = read_bundle(text, scope.project)
    rows, task_id = bundle.rows, bundle.task_id
    async with scope.store.transaction() as tx:
        await tx.checkpoints.lock(scope.project, task_id)
        await leases.check_free(tx, scope, task_id, None, doing="import")
        here = await tx.checkpoints.chain(scope.project, task_id)
        for mine, theirs in zip(here, rows, strict=False):
            if mine.hash != theirs.hash:
                raise _fork(task_id, mine, theirs)
        added = rows[len(here) :]
        for row in added:
            await tx.checkpoints.insert(scope.project, row)
        existing = await tx.evidence.rows(scope.project, [r.ref for r in bundle.records])
        clash = [r.ref for r in bundle.records if r.ref in existing and existing[r.ref].sha256 != r.sha256]
        if clash:
            raise Refused(f"evidence {clash[0]} here holds other content than the bundle's; nothing was imported")
        fresh = [r for r in bundle.records if r.ref not in existing]
        await tx.evidence.insert(scope.project, fresh)
        local = await tx.digests.get(scope.project, task_id)
        if bundle.digest is not None and (local is None or (local.imported_from is not None and added)):
            await tx.digests.put(scope.project, bundle.digest)
    latest = rows[-1] if len(rows) >= len(here) else here[-1]
    return Imported(task_id, [row.version for row in added], len(fresh), latest.version, latest.hash, bundle.redacted)
