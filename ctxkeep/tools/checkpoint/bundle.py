"""Task bundles, for teams without a server: `ctxkeep export TASK` writes one task's whole checkpoint chain, the
evidence its states cite and its history digest as one deterministic JSON file to commit into a repository;
`ctxkeep import BUNDLE` verifies it and merges it into this project.

Deterministic: sorted keys, one value per line, no export time, so the same task exports to the same bytes and a
new version shows as a small diff. Verified on import, before anything is written: the bundle's own sha256 (a changed
file is refused), every version's hash and its link to the one before (the chain), every evidence record's sha256.
Merged only forward: a bundle whose versions extend this database's adds the new ones; one this database already
holds adds nothing; one whose history differs from this database's at some version is refused, naming that version
and both sides' hashes (the fork), and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from dataclasses import dataclass
from typing import Any

from ctxkeep.errors import InvalidInput, Refused
from ctxkeep.storage import CheckpointRow, DigestRow, EvidenceRow, NewEvidence, Tx
from ctxkeep.text import canonical_json
from ctxkeep.tools.checkpoint import leases
from ctxkeep.tools.checkpoint.versions import load_version, row_hash
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.shared.search_terms import INDEX_VERSION, evidence_terms

FORMAT, FORMAT_VERSION = "ctxkeep-bundle", 1
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
    """What an import did: the versions and evidence records it added, and the task's latest version now."""

    task_id: str
    added_versions: list[int]
    added_evidence: int
    latest_version: int
    latest_hash: str


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


def _sealed(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "bundle_sha256": hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()}


async def export_bundle(scope: Scope, task_id: str) -> str:
    """The task's bundle as text (the same task exports to the same bytes); raises NotFound."""
    async with scope.store.snapshot() as tx:
        await load_version(tx, scope, task_id, None)
        rows = await tx.checkpoints.chain(scope.project, task_id)
        records = await _evidence(tx, scope, _cited(rows))
        blobs = await tx.evidence.blobs([r.blob_id for r in records])
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
    return json.dumps(_sealed(body), sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def _parse(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"the bundle is not JSON ({exc.msg} at line {exc.lineno}); send a file `ctxkeep export` wrote"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InvalidInput('not a ctxkeep bundle (no "format": "ctxkeep-bundle"); send a file `ctxkeep export` wrote')
    if data.get("format_version") != FORMAT_VERSION:
        raise InvalidInput(
            f"bundle format {data.get('format_version')!r}, this ctxkeep reads {FORMAT_VERSION}: upgrade ctxkeep"
        )
    claimed = data.pop("bundle_sha256", None)
    if claimed != _sealed(data)["bundle_sha256"]:
        raise Refused(
            "the bundle was changed after it was exported (its bundle_sha256 does not match its content); "
            "nothing was imported: export it again from the source"
        )
    return data


def _versions(data: dict[str, Any]) -> list[CheckpointRow]:
    """The bundle's chain as rows, each version's hash and link checked."""
    rows, parent = [], None
    task_id = data["task_id"]
    for expected, item in enumerate(data["versions"], start=1):
        row = CheckpointRow(
            task_id=task_id,
            state_json=canonical_json(item["state"]),
            violations_json=json.dumps(item["violations"], ensure_ascii=False),
            **{name: item[name] for name in _VERSION_FIELDS},
        )
        if row.version != expected or row.parent_hash != parent or row.hash != row_hash(row):
            raise Refused(
                f"the bundle's version {expected} of task {task_id!r} does not match its hash chain; nothing was imported"
            )
        rows.append(row)
        parent = row.hash
    if not rows:
        raise InvalidInput(f"the bundle holds no version of task {task_id!r}")
    return rows


def _records(data: dict[str, Any]) -> list[NewEvidence]:
    out = []
    for item in data["evidence"]:
        raw = item["content"].encode("utf-8")
        if hashlib.sha256(raw).hexdigest() != item["sha256"] or not _REF.match(item["ref"]):
            raise Refused(
                f"the bundle's evidence {str(item.get('ref'))[:40]} does not match its sha256; nothing was imported"
            )
        out.append(
            NewEvidence(
                **{name: item[name] for name in _EVIDENCE_FIELDS},
                tags_json=json.dumps(item["tags"]),
                index_version=INDEX_VERSION,
                data=zlib.compress(raw, 6),
                terms=evidence_terms(item["title"], item["content"]),
            )
        )
    return out


def _fork(task_id: str, here: CheckpointRow, there: CheckpointRow) -> Refused:
    def side(row: CheckpointRow) -> str:
        return f"{row.hash[:12]} (saved {row.created_at[:19]}{' by ' + row.author if row.author else ''})"

    return Refused(
        f"task {task_id!r} has a diverging history: it forks at version {here.version}: this database has "
        f"{side(here)}, the bundle has {side(there)}; versions 1 to {here.version - 1} are the same. Nothing was "
        "imported: reconcile the two by hand (checkpoint_diff), or import into another project"
    )


async def import_bundle(scope: Scope, text: str) -> Imported:
    """Verify a bundle and merge what it adds; raises InvalidInput (not a bundle), Refused (changed, a broken chain, a
    diverging history), LeaseHeld (another executor holds the task)."""
    data = _parse(text)
    rows, records = _versions(data), _records(data)
    task_id = rows[0].task_id
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
        existing = await tx.evidence.rows(scope.project, [r.ref for r in records])
        clash = [r.ref for r in records if r.ref in existing and existing[r.ref].sha256 != r.sha256]
        if clash:
            raise Refused(f"evidence {clash[0]} here holds other content than the bundle's; nothing was imported")
        fresh = [r for r in records if r.ref not in existing]
        await tx.evidence.insert(scope.project, fresh)
        digest = data.get("digest")
        if digest is not None and (added or await tx.digests.get(scope.project, task_id) is None):
            await tx.digests.put(scope.project, DigestRow(task_id, **digest))
    latest = rows[-1] if len(rows) >= len(here) else here[-1]
    return Imported(task_id, [row.version for row in added], len(fresh), latest.version, latest.hash)
