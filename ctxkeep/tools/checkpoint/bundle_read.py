"""Reading a task bundle as untrusted input, before anything is written: what `ctxkeep import` may store.

A bundle passes, in order: JSON of at most MAX_DEPTH levels; the format; its seal (bundle_sha256 over the rest); the
bundle models (every task id, state and record through the types of a save and a put); the hash chain; each version
checked as a save checks it (a version that breaks a rule must record it, as a non-strict save does, else it is
refused); no secret in a signed version (redacting it would break the chain, so such a bundle is refused); each
evidence ref recomputed from its content and fields in the project it names. Evidence text and the digest are redacted
as a put redacts: a record whose text changes is stored as a record of this project under the ref a put gives it (the
exporter's ref is bound to the text with the secret), and its new ref is reported.

InvalidInput: the bundle is malformed (one line: what and where, as a path into the bundle, e.g.
`versions[3].state.goal`). Refused: it is well-formed but a check says no. Both say nothing was imported.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from collections.abc import Iterator
from typing import Any

from pydantic import ValidationError

from ctxkeep.errors import InvalidInput, Refused
from ctxkeep.models import STATE_SCHEMA_VERSION, TaskState, Violation
from ctxkeep.models.bundle import Bundle, BundleEvidence, BundleVersion
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.storage import CheckpointRow, DigestRow, NewEvidence
from ctxkeep.text import canonical_json
from ctxkeep.tools.checkpoint.verify import check_new_state, verify_states
from ctxkeep.tools.checkpoint.versions import row_hash
from ctxkeep.tools.evidence import evidence_ref, stored_record
from ctxkeep.tools.redaction.redact import redact_secrets

FORMAT, FORMAT_VERSION = "ctxkeep-bundle", 1
MAX_DEPTH = 100  # as over MCP: a request nesting deeper is refused, so no save stores a deeper state
NOTHING = "nothing was imported"
_SIGNED_ONLY = ("hash", "parent_hash")  # hex digests: never secrets, and not text a person wrote


@dataclass(frozen=True)
class ReadBundle:
    """What a checked bundle may add: its chain, its evidence records (redacted), its digest (quoted data)."""

    task_id: str
    rows: list[CheckpointRow]
    records: list[NewEvidence]
    redacted: dict[str, str]  # the bundle's ref -> the ref its redacted copy is stored under
    digest: DigestRow | None


def sealed(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with its seal: the sha256 of its canonical JSON."""
    return {**body, "bundle_sha256": hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()}


def read_bundle(text: str, project: str) -> ReadBundle:
    """The bundle `text` checked for import into `project`; raises InvalidInput or Refused (see the module)."""
    data = _parsed(text)
    bundle = _validated(data)
    if bundle.task_id != data["task_id"]:
        raise InvalidInput(f"the bundle's task_id {data['task_id']!r} has spaces around it; {NOTHING}")
    rows = _chain(bundle, data)
    for index, version in enumerate(data["versions"]):
        _no_secret(f"versions[{index}]", {k: v for k, v in version.items() if k not in _SIGNED_ONLY})
    _verified(bundle)
    records, redacted = _records(bundle.evidence, project)
    return ReadBundle(bundle.task_id, rows, records, redacted, _digest(bundle))


def _digest(bundle: Bundle) -> DigestRow | None:
    """The bundle's digest, redacted, marked as imported from it (quoted data wherever it is shown)."""
    found = bundle.digest
    if found is None:
        return None
    return DigestRow(
        bundle.task_id,
        redact_secrets(found.digest)[0],
        redact_secrets(found.summary)[0] if found.summary is not None else None,
        redact_secrets(found.source)[0],
        found.updated_at,
        imported_from=f"bundle {bundle.bundle_sha256[:12]}",
    )


def _parsed(text: str) -> dict[str, Any]:
    """The JSON object, at most MAX_DEPTH deep, of the right format, sealed by its own sha256."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise InvalidInput(f"the bundle nests deeper than JSON can be read; {NOTHING}") from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"the bundle is not JSON ({exc.msg} at line {exc.lineno}); send a file `ctxkeep export` wrote"
        ) from None
    except ValueError as exc:  # an integer of more digits than Python reads
        raise InvalidInput(f"the bundle is not JSON ctxkeep reads ({exc}); {NOTHING}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InvalidInput('not a ctxkeep bundle (no "format": "ctxkeep-bundle"); send a file `ctxkeep export` wrote')
    if data.get("format_version") != FORMAT_VERSION:
        raise InvalidInput(
            f"bundle format {str(data.get('format_version'))[:20]!r}, this ctxkeep reads {FORMAT_VERSION}: upgrade ctxkeep"
        )
    depth, where = _deepest(data)
    if depth > MAX_DEPTH:
        raise InvalidInput(f"the bundle nests {depth} levels deep at {where}, at most {MAX_DEPTH} are read; {NOTHING}")
    for place, found in _strings(data, ""):
        problem = _unstorable(found)
        if problem:
            raise InvalidInput(f"the bundle's {place or 'top level'} holds {problem}; send text; {NOTHING}")
    body = {key: value for key, value in data.items() if key != "bundle_sha256"}
    if data.get("bundle_sha256") != sealed(body)["bundle_sha256"]:
        raise Refused(
            "the bundle was changed after it was exported (its bundle_sha256 does not match its content); "
            f"{NOTHING}: export it again from the source"
        )
    return data


def _deepest(data: Any) -> tuple[int, str]:
    """How deep the value nests, and the path of its first value that deep (without recursion: any depth is safe)."""
    deepest, where = 0, ""
    stack: list[tuple[Any, int, str]] = [(data, 1, "")]
    while stack:
        value, depth, path = stack.pop()
        if not isinstance(value, (dict, list)):
            continue
        if depth > deepest:
            deepest, where = depth, path
        if depth > MAX_DEPTH:
            break
        items = value.items() if isinstance(value, dict) else enumerate(value)
        stack += [(child, depth + 1, _step(path, key)) for key, child in items]
    return deepest, where or "the top"


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string in the value (keys too, at their member's path), with its path (without recursion)."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                yield _step(where, str(key)), str(key)
                stack.append((child, _step(where, str(key))))
        elif isinstance(item, list):
            stack += [(child, _step(where, index)) for index, child in enumerate(item)]
        elif isinstance(item, str):
            yield where, item


def _unstorable(text: str) -> str | None:
    """A lone surrogate in the text (no UTF-8 holds it, so nothing can hash or store it), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"a lone surrogate at position {exc.start}"
    return None


def _step(path: str, key: str | int) -> str:
    """The path one step further, as one line of plain text (a key may hold a newline or a lone surrogate)."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    shown = json.dumps(key)[1:-1][:200]
    return f"{path}.{shown}" if path else shown


def _validated(data: dict[str, Any]) -> Bundle:
    try:
        return Bundle.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput(_problem(exc)) from None


def _problem(exc: ValidationError, prefix: str = "") -> str:
    """The first problem of a validation error as one line: where in the bundle, what is wrong."""
    errors = exc.errors(include_url=False)
    where = prefix
    for part in errors[0]["loc"]:
        where = _step(where, part)
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    message = " ".join(str(errors[0]["msg"]).split())
    return f"the bundle's {where or 'top level'}: {message}{more}; {NOTHING}"


def _chain(bundle: Bundle, data: dict[str, Any]) -> list[CheckpointRow]:
    """The bundle's chain as rows (each state as the exporter stored it), each version's number, hash and link checked."""
    rows, parent = [], None
    for index, (version, raw) in enumerate(zip(bundle.versions, data["versions"], strict=True), start=1):
        if version.state_schema > STATE_SCHEMA_VERSION:
            raise InvalidInput(
                f"the bundle's versions[{index - 1}] was saved by a newer ctxkeep (state schema "
                f"{version.state_schema}); upgrade ctxkeep to import it; {NOTHING}"
            )
        row = _row(bundle.task_id, version, raw)
        if row.version != index or row.parent_hash != parent or row.hash != row_hash(row):
            raise Refused(
                f"the bundle's version {index} of task {bundle.task_id!r} does not match its hash chain; {NOTHING}"
            )
        rows.append(row)
        parent = row.hash
    return rows


def _row(task_id: str, version: BundleVersion, raw: dict[str, Any]) -> CheckpointRow:
    return CheckpointRow(
        task_id=task_id,
        version=version.version,
        hash=version.hash,
        parent_hash=version.parent_hash,
        state_json=canonical_json(raw["state"]),
        state_schema=version.state_schema,
        trigger=version.trigger,
        goal_change_reason=version.goal_change_reason,
        violations_json=json.dumps(raw["violations"], ensure_ascii=False),
        created_at=version.created_at,
        author=version.author,
        owner=version.owner,
        took_over=version.took_over,
    )


def _no_secret(path: str, value: Any) -> None:
    """Refuse a signed version holding text the save path's redaction would change (the secret is never echoed)."""
    for where, text in _strings(value, path):
        if redact_secrets(text)[1]:
            raise Refused(
                f"the bundle's {where} holds a secret (ctxkeep stores none in clear, and redacting a signed version "
                f"would break its hash chain); {NOTHING}. Its author can save the latest state as a new task (a save "
                "redacts it) and export that"
            )


def _verified(bundle: Bundle) -> None:
    """Each version checked against the one before as checkpoint_save checks it; a version that breaks a rule must
    record it (a non-strict save does), or the bundle is refused."""
    before: TaskState | None = None
    for version in bundle.versions:
        found = (
            check_new_state(version.state)
            if before is None
            else verify_states(before, version.state, version.goal_change_reason)
        )
        recorded = {(v.rule, v.item) for v in version.violations}
        hidden = [v for v in found if (v.rule, v.item) not in recorded]
        if hidden:
            raise Refused(
                f"the bundle's version {version.version} of task {bundle.task_id!r} breaks rules a save checks and "
                f"does not record them as a non-strict save would: {_listed(hidden)}; {NOTHING}"
            )
        before = version.state


def _listed(violations: list[Violation]) -> str:
    shown = "; ".join(" ".join(f"{v.rule} | {v.item[:80]}".split()) for v in violations[:5])
    return shown + (f"; and {len(violations) - 5} more" if len(violations) > 5 else "")


def _records(evidence: list[BundleEvidence], project: str) -> tuple[list[NewEvidence], dict[str, str]]:
    """The records to store: each ref recomputed from its content and fields, the text redacted as a put redacts."""
    seen: dict[str, int] = {}
    records: dict[str, NewEvidence] = {}
    redacted: dict[str, str] = {}
    for index, found in enumerate(evidence):
        where = f"evidence[{index}]"
        if found.ref in seen:
            raise InvalidInput(
                f"the bundle's {where}.ref: {found.ref} is evidence[{seen[found.ref]}]'s too; send each record once; "
                f"{NOTHING}"
            )
        seen[found.ref] = index
        record = _record(where, found, project)
        if record.ref != found.ref:
            redacted[found.ref] = record.ref
        records.setdefault(record.ref, record)
    return list(records.values()), redacted


def _record(where: str, found: BundleEvidence, project: str) -> NewEvidence:
    sha256 = hashlib.sha256(found.content.encode("utf-8")).hexdigest()
    if sha256 != found.sha256:
        raise Refused(f"the bundle's {where} ({found.ref}) does not match its sha256; {NOTHING}")
    item = _item(where, found)
    origin = found.ref_project or project
    if evidence_ref(origin, sha256, item) != found.ref:
        raise Refused(
            f"the bundle's {where}: its ref {found.ref} is not the one its content and fields give in project "
            f"{origin[:200]!r} (a bundle cannot choose the ref its text is stored under); {NOTHING}"
        )
    try:
        record = stored_record(origin, item, found.created_at, found.redactions)
        if record.redactions > found.redactions:  # the text held a secret: a record of this project, as a put makes it
            return stored_record(project, item, found.created_at, found.redactions)
    except InvalidInput as exc:
        raise InvalidInput(f"the bundle's {where}: {exc}; {NOTHING}") from None
    return replace(record, ref_project=None if origin == project else origin)


def _item(where: str, found: BundleEvidence) -> EvidenceItem:
    fields = ("content", "kind", "source", "title", "task_id", "tags", "effective_at", "expires_at")
    try:
        return EvidenceItem.model_validate({name: getattr(found, name) for name in fields})
    except ValidationError as exc:
        raise InvalidInput(_problem(exc, where)) from None
