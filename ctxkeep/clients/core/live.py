"""The per-event work every client's hooks share, on an open database: record a prompt, take in a finished tool
call (records, offload), decide the verification gate at a stop, and build what a session start injects.

Client adapters map their hook input onto these and their output back; nothing here knows a client's format.
Standard library only (per-event hooks).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable

from ctxkeep.clients.core import capture
from ctxkeep.clients.core.capture import Known, Record, ToolEvent
from ctxkeep.clients.core.hook_io import Where
from ctxkeep.clients.core.shaping import Offload, Shaping, family_of, over_limit
from ctxkeep.storage.hook_store import HotSession, RecordRow
from ctxkeep.text import LazyPattern

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from ctxkeep.clients.core.session_view import View
    from ctxkeep.tools.compaction_check import Finding

_RUNS_FILE = LazyPattern(r"[\w./-]+")
# what the log of what the model was shown (ctxkeep.storage.shown) says each entry was
SHOWN_VIEW = "the records' view (session start or resume)"
SHOWN_COMPACT_VIEW = "the records' view (after a compaction, no summary visible yet)"
SHOWN_REPAIR = "repair of the compaction summary"
SHOWN_NOTHING_LOST = "the compaction summary carries every record: nothing injected"
SHOWN_LATE_REPAIR = "repair of the compaction summary (delivered with the next prompt or tool result)"
SHOWN_SHAPED = "shaped: the model got this view instead of the output"
SHOWN_KEPT = "offloaded: the model got the whole output (not replaced)"
SHOWN_BLOCKED = "Stop blocked once"


def _rows(records: list[Record]) -> list[RecordRow]:
    return [(r.kind, r.key, r.text, r.at, r.status, r.source, r.ref) for r in records]


def load_records(conn: HotSession, w: Where, kinds: tuple[str, ...] = ()) -> list[Record]:
    return [Record(*row) for row in conn.records(kinds)]


def known_of(conn: HotSession, w: Where) -> Known:
    """Task ids and open errors the session's records already hold (capture needs them to pair later events)."""
    known = Known()
    for record in load_records(conn, w, ("task", "error", "env", "prompt")):
        if record.kind == "task":
            known.tasks[record.key] = record.text
        elif record.kind == "env":
            known.env[record.key] = (record.status, record.source)
        elif record.kind == "prompt":
            known.heard(record.text)
        elif record.status == "open":
            known.open_errors[record.key] = record.text
    return known


def session_task(conn: HotSession, w: Where, prefix: str) -> str:
    """The task this session's records and offloads belong to: the one it is bound to, else `<prefix><session id>`."""
    bound = conn.binding()
    return bound[0] if bound else f"{prefix}{w.session_id}"


def record_prompt(conn: HotSession, w: Where, text: str) -> int:
    return conn.put_records(_rows(capture.from_prompt(text, w.now())))


def take_tool(conn: HotSession, w: Where, event: ToolEvent, shaping: Shaping, task_id: str) -> Offload | None:
    """Record a finished tool call; a shapeable output over its limit goes to the evidence inbox first. Returns the
    offload when the model should get its shaped view instead of the output."""
    family = family_of(event.name)
    taken: Offload | None = None
    if family and (family != "read" or shaping.read) and over_limit(family, event.output, shaping):
        from ctxkeep.clients.core.shaping import compressed, offload  # redaction: only when something is offloaded

        taken = offload(w.project, task_id, event.name, family, event.output)
        with conn.batch():
            conn.inbox_put(
                taken.ref,
                "tool_result",
                event.name,
                None,
                task_id,
                compressed(taken.content),
                taken.redactions,
                w.now(),
            )
            conn.log_shown("offloaded", taken.view, w.now(), SHOWN_KEPT, event.name, taken.ref)
        event = event._replace(ref=taken.ref)
    conn.put_records(_rows(capture.from_tool(event, known_of(conn, w))))
    return taken if taken is not None and shaping.enabled else None


def note_shaped(conn: HotSession) -> None:
    """The client put the shaped view of the output just offloaded in place of the output."""
    conn.relabel_last_shown("offloaded", SHOWN_SHAPED)


def file_name(path: str) -> str:
    """The last part of a path, as `pathlib.PurePath(path).name` gives it (pathlib costs a hook process ~4 ms)."""
    rest = os.path.splitdrive(path)[1].replace(os.altsep or os.sep, os.sep)
    parts = [part for part in rest.split(os.sep) if part not in ("", ".")]
    return parts[-1] if parts else ""


def _verified(edit: Record, records: list[Record]) -> bool:
    """A write is verified by a later check, a later read of the file, or a later command naming it."""
    name = file_name(edit.key)
    for record in records:
        if record.at <= edit.at:
            continue
        if record.kind == "check" or (record.kind == "read" and record.key == edit.key):
            return True
        if record.kind == "ran" and any(file_name(word) == name for word in _RUNS_FILE.findall(record.text)):
            return True
    return False


def gate_reason(conn: HotSession, w: Where, stop_active: bool) -> str | None:
    """Why this stop should be blocked once (files written this turn and not verified since), else None; records
    the stop either way."""
    state = conn.hook_state()
    since = str(state["last_stop_at"] or "")
    records = load_records(conn, w, ("edit", "check", "read", "ran"))
    unverified = [r for r in records if r.kind == "edit" and r.at > since and not _verified(r, records)]
    blocked = str(state["gate_blocked_at"] or "")
    now = w.now()
    if stop_active or not unverified or blocked >= min(r.at for r in unverified):
        conn.set_hook_state(last_stop_at=now)
        return None
    tests = [r.text for r in records if r.kind == "check" and r.key.startswith("test:")]
    files = ", ".join(dict.fromkeys(file_name(r.key) for r in unverified))
    how = (
        f"run `{tests[-1]}` (the test command used earlier in this session)"
        if tests
        else "run the project's tests, build or linter"
    )
    reason = (
        f"ctxkeep verification gate: {files} changed since the last test, build or lint run and were not read back "
        f"or run. Before you finish, {how}, or say why no check applies. This gate blocks once per change "
        "(CTXKEEP_GATE=off turns it off)."
    )
    with conn.batch():
        conn.set_hook_state(gate_blocked_at=now)
        conn.log_shown("blocked", reason, now, SHOWN_BLOCKED, "", "")
    return reason


def _task(conn: HotSession, w: Where) -> tuple[str, int, dict[str, object], list[tuple[str, str, str]]] | None:
    bound = conn.binding()
    found = conn.latest_state_json(bound[0]) if bound and bound[1] else None
    if not bound or found is None:
        return None
    state = json.loads(found[1])
    return bound[0], found[0], state if isinstance(state, dict) else {}, conn.open_intents(bound[0])


def compaction_brief(conn: HotSession, w: Where, budget: int, measure: Callable[[str], int] = len) -> str:
    """What the client's summarizer should carry, from this session's records and the task the agent saved."""
    from ctxkeep.clients.core.briefs import compaction_brief as brief
    from ctxkeep.clients.core.session_view import must_keep, task_items

    task = _task(conn, w)
    return brief(must_keep(view_of(conn, w)) + (task_items(task[2], task[3], task[0]) if task else []), budget, measure)


# the tasks a client's hooks keep for its sessions (`<prefix><session id>`): the startup brief shows those sessions'
# records instead
SESSION_TASK_PREFIXES = ("cc-", "codex-", "gemini-", "cursor-", "vscode-", "windsurf-", "cline-")


def startup_brief(conn: HotSession, w: Where, days: float, budget: int, measure: Callable[[str], int] = len) -> str:
    """Where this project's work stopped, for a new session: the latest earlier session that left something open,
    and the open tasks the agent saved, touched within `days`; "" when there is none."""
    from ctxkeep.clients.core import briefs
    from ctxkeep.clients.core.session_view import derive

    moment = time.time() - days * 86_400
    since = time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(moment)) + f"{int(moment % 1 * 1_000_000):06d}Z"
    parts = []
    for session_id, ended in conn.other_sessions(since):
        view = derive([Record(*row) for row in conn.records_of(session_id)])
        if briefs.worth_resuming(view):
            parts.append(briefs.session_lines(view, ended))
            break
    for task_id, _, state_json, saved in conn.recent_tasks(since):
        state = json.loads(state_json)
        if task_id.startswith(SESSION_TASK_PREFIXES) or not isinstance(state, dict):
            continue
        if state.get("pending") or state.get("next_action") or conn.open_intents(task_id):
            parts.append(briefs.task_lines(task_id, state, saved))
    return briefs.startup_brief(parts[:3], budget, measure)


def view_of(conn: HotSession, w: Where) -> View:
    from ctxkeep.clients.core.session_view import derive

    return derive(load_records(conn, w))


def summary_losses(conn: HotSession, w: Where, summary: str) -> list[Finding]:
    """What a client's compaction summary loses of the session's records and of the task the agent saved."""
    from ctxkeep.clients.core.session_view import must_keep, task_items
    from ctxkeep.tools.compaction_check import check_summary

    task = _task(conn, w)
    return check_summary(must_keep(view_of(conn, w)) + (task_items(task[2], task[3], task[0]) if task else []), summary)


def keep_summary(conn: HotSession, w: Where, task_id: str, summary: str, findings: list[Finding]) -> None:
    """Keep the summary as the task's semantic summary, marked as verified or with what it lost."""
    mark = (
        "[checked by ctxkeep against the session's records: nothing lost]"
        if not findings
        else f"[checked by ctxkeep against the session's records: {len(findings)} loss(es), repaired at session start: "
        + "; ".join(f"{f.rule} {f.item.text[:80]}" for f in findings[:10])
        + "]"
    )
    conn.keep_summary(task_id, f"{mark}\n{summary}", "client compaction", w.now())


def injection(
    conn: HotSession,
    w: Where,
    summary: str | None,
    budget: int,
    header: str,
    session_task_id: str,
    footer: str = "",
    measure: Callable[[str], int] = len,
    after_compaction: bool = True,
) -> tuple[str, int]:
    """What a session start injects (the repair of `summary`, kept as the task's summary, or the records' view
    without one) and how many losses the summary had (0 without one); "" for the view the log says was injected last,
    unless a compaction replaced the context since (`after_compaction`)."""
    from ctxkeep.clients.core.injection import records_view, repair
    from ctxkeep.clients.core.session_view import must_keep, task_items
    from ctxkeep.tools.compaction_check import check_summary

    view = view_of(conn, w)
    task = _task(conn, w)
    extra = task_items(task[2], task[3], task[0]) if task else []
    if summary is not None:
        findings = check_summary(must_keep(view) + extra, summary)
        repaired = repair(findings, header, budget, measure)
        with conn.batch():
            keep_summary(conn, w, task[0] if task else session_task_id, summary, findings)
            conn.log_shown("injected", repaired, w.now(), SHOWN_REPAIR if repaired else SHOWN_NOTHING_LOST, "", "")
        return repaired, len(findings)
    state = conn.hook_state()
    cached = task is None and state["injection"] and state["injection_generation"] == state["generation"]
    text = str(state["injection"]) if cached else records_view(view, header, budget, extra, measure, footer)
    last = next((row[2] for row in reversed(conn.shown()) if row[0] == "injected"), None)
    if not after_compaction and last == text:
        return "", 0
    if cached:
        conn.log_shown("injected", text, w.now(), SHOWN_VIEW, "", "")
        return text, 0
    with conn.batch():
        conn.set_hook_state(injection=text, injection_generation=state["generation"])
        conn.log_shown("injected", text, w.now(), SHOWN_VIEW, "", "")
    return text, 0


# A client may show its compaction summary only after its session-start hook ran (Claude Code 2.1.332 writes it, and
# calls PostCompact, after SessionStart(compact)). The repair is then computed at PostCompact and kept here, to be
# delivered once by the next hook that can add context (a prompt, a tool result, a session start).
_PENDING = ("hook", "pending-repair")
_COMPACT_VIEW = ("hook", "compact-view")


def note_compact_view(conn: HotSession, w: Where) -> None:
    """Session start after a compaction injected the records' view (no summary was visible yet)."""
    conn.put_records([(*_COMPACT_VIEW, "view", w.now(), "", "", "")])
    conn.relabel_last_shown("injected", SHOWN_COMPACT_VIEW)


def defer_repair(
    conn: HotSession, w: Where, summary: str, budget: int, header: str, measure: Callable[[str], int] = len
) -> int:
    """Keep the repair of a summary seen only after session start, for the next hook that can add context; when the
    records' view was injected at that session start already, only what the view cannot say (unverified claims).
    Returns how many losses the summary had."""
    from ctxkeep.clients.core.injection import repair
    from ctxkeep.clients.core.session_view import must_keep, task_items
    from ctxkeep.tools.compaction_check import check_summary

    task = _task(conn, w)
    findings = check_summary(
        must_keep(view_of(conn, w)) + (task_items(task[2], task[3], task[0]) if task else []), summary
    )
    viewed = [r for r in load_records(conn, w, ("hook",)) if (r.kind, r.key) == _COMPACT_VIEW]
    worker = str(conn.hook_state()["worker_started_at"] or "")
    if viewed and viewed[0].at >= worker:
        findings = [f for f in findings if f.rule == "summary_claim_unverified"]
    text = repair(findings, header, budget, measure) if findings else ""
    conn.put_records([(*_PENDING, text, w.now(), "pending" if text else "", "", "")])
    return len(findings)


def take_pending(conn: HotSession, w: Where) -> str:
    """The repair kept for delivery, once ("" when there is none)."""
    pending = [r for r in load_records(conn, w, ("hook",)) if (r.kind, r.key) == _PENDING and r.status == "pending"]
    if not pending:
        return ""
    conn.put_records([(*_PENDING, pending[0].text, w.now(), "delivered", "", "")])
    conn.log_shown("injected", pending[0].text, w.now(), SHOWN_LATE_REPAIR, "", "")
    return pending[0].text
