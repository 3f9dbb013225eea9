"""The viewer's session pages: the sessions the hooks saw (with a checkpoint or not), one session's log of what the
model was shown (every injection with each section's token share, each offloaded tool output's view beside its
ref, each Stop-gate block with its reason), and every session's injections. Each function returns the page body."""

from __future__ import annotations

from ctxkeep.cli.ui.data import Injection, SeenSession, SessionInjections, SessionView, Shown
from ctxkeep.cli.ui.html import Html, bar, esc, href, pre_with_refs, ref_link, section, table, when

_TAGS = {"injected": "injection", "offloaded": "tool output", "blocked": "gate block"}
_SHAPED = "shaped:"


def _anchor(at: str) -> str:
    """An entry's id on its session's page: its time, letters and digits only."""
    return "shown-" + "".join(c for c in at if c.isalnum())


def session_link(session_id: str, anchor: str = "") -> Html:
    return f'<a class="ident" href="{href("/session", id=session_id)}{esc(anchor)}">{esc(session_id)}</a>'


def _task(seen: SeenSession) -> Html:
    """The session's task, or that it has no checkpoint yet."""
    if seen.task_id:
        return f'<a class="ident" href="{href("/task", id=seen.task_id)}">{esc(seen.task_id)}</a>'
    return '<span class="muted">no checkpoint yet</span>'


def sessions_table(sessions: list[SeenSession]) -> Html:
    """The sessions the hooks saw, the most recently seen first, those without a checkpoint too."""
    if not sessions:
        return (
            '<p class="muted">No session seen yet: the hooks record a session from its first prompt or tool call '
            "(`ctxkeep install claude-code`, or another client).</p>"
        )
    rows = [
        (
            session_link(s.row.session_id),
            _task(s),
            when(s.row.last_at, True),
            f"{s.row.records:,}",
            f"{s.row.injected:,}",
            f"{s.row.offloaded:,}",
            f'<span class="bad">{s.row.blocked:,}</span>' if s.row.blocked else "0",
        )
        for s in sessions
    ]
    return table(
        ["session", "task", "last seen", "records", "injections", "outputs offloaded", "gate blocks"],
        rows,
        "sessions",
    )


def _sections(entry: Shown) -> Html:
    bars = "".join(bar(s.title[:80], s.tokens, entry.tokens) for s in entry.sections)
    return f'<div class="bars sections">{bars}</div>' if bars else ""


def _size(entry: Shown) -> str:
    return f"{len(entry.row.text):,} characters, {entry.tokens:,} tokens"


def _entry(entry: Shown, open_text: bool) -> Html:
    row = entry.row
    shaped = row.kind == "offloaded" and row.label.startswith(_SHAPED)
    tag = "shaped output" if shaped else _TAGS.get(row.kind, row.kind)
    head = (
        f'<div class="shown-head"><span class="tag {esc(row.kind)}">{esc(tag)}</span> '
        f"{when(row.at, True)} <strong>{esc(row.label)}</strong> "
        f'<span class="muted">{esc(_size(entry))}</span></div>'
    )
    if row.kind == "injected":
        text = (
            f"<details{' open' if open_text else ''}><summary>The text, as the model received it</summary>"
            f"{pre_with_refs(row.text)}</details>"
            if row.text
            else '<p class="muted">Nothing was added: the summary carried every record.</p>'
        )
        body = _sections(entry) + text
    elif row.kind == "offloaded":
        seen = "what the model got instead of the output" if shaped else "the view (the model got the whole output)"
        body = (
            f'<div class="offload"><div class="offload-ref">{ref_link(row.ref)}<span class="muted">the whole '
            f'output of {esc(row.source or "a tool")}, as stored</span></div><div><p class="muted">{seen}</p>'
            f"{pre_with_refs(row.text)}</div></div>"
        )
    else:
        body = f'<blockquote class="reason">{esc(row.text)}</blockquote>'
    return f'<li class="shown-entry {esc(row.kind)}" id="{esc(_anchor(row.at))}">{head}{body}</li>'


def _kept(injected: Injection) -> Html:
    bars = "".join(bar(s.title[:80], s.tokens, injected.tokens) for s in injected.sections)
    return (
        f'<p class="muted">Only the last injection is known for this session (the hooks that ran it kept no log): '
        f"seen {when(injected.row.seen_at, True)}, {injected.tokens:,} tokens, {len(injected.row.text):,} "
        f'characters.</p><div class="bars sections">{bars}</div>'
        f"<details open><summary>The text, as the model received it</summary>{pre_with_refs(injected.row.text)}"
        "</details>"
    )


def session_page(view: SessionView) -> Html:
    row = view.seen.row
    facts = (
        f'<p class="session-facts">task: {_task(view.seen)} · first seen {when(row.first_at, True)} · last seen '
        f"{when(row.last_at, True)} · {row.records:,} record(s) · {row.injected:,} injection(s), {row.offloaded:,} "
        f"output(s) offloaded, {row.blocked:,} gate block(s)</p>"
    )
    if not view.shown:
        log = _kept(view.last_injection) if view.last_injection else '<p class="muted">Nothing shown yet.</p>'
    else:
        last = max((n for n, e in enumerate(view.shown) if e.row.kind == "injected"), default=-1)
        log = '<ol class="shown">' + "".join(_entry(e, n == last) for n, e in enumerate(view.shown)) + "</ol>"
    return facts + section(
        "What the hooks showed the model, oldest first",
        '<p class="muted">Injections at session start, resume and after a compaction; tool outputs kept as evidence '
        "(a shaped one replaced the output in the model's context); stops the verification gate blocked.</p>" + log,
    )


def _injection_rows(found: SessionInjections) -> Html:
    rows = [
        (
            when(e.row.at, True),
            esc(e.row.label),
            f"{len(e.row.text):,}",
            f"{e.tokens:,}",
            f'<a href="{href("/session", id=found.seen.row.session_id)}#{esc(_anchor(e.row.at))}">the text</a>',
        )
        for e in found.injections
    ]
    return table(["injected", "what", "characters", "tokens", ""], rows, "injections-of-session")


def injections_page(found: list[SessionInjections]) -> Html:
    if not found:
        return (
            '<p class="muted">No session has had an injection yet. The hooks inject the session\'s records at '
            "session start, on resume and after a compaction.</p>"
        )
    parts = []
    for item in found:
        sid = item.seen.row.session_id
        head = (
            f"<h2>Session {session_link(sid)}</h2><p>{_task(item.seen)} · {len(item.injections) or 1} injection(s)</p>"
        )
        if item.injections:
            latest = item.injections[-1]
            body = (
                _injection_rows(item)
                + f"<p>The latest, {when(latest.row.at, True)} ({esc(latest.row.label)}):</p>"
                + _sections(latest)
                + f"<details open><summary>The text, as the model received it</summary>{pre_with_refs(latest.row.text)}"
                "</details>"
            )
        else:
            body = _kept(item.last_kept) if item.last_kept else ""
        parts.append(f'<section class="injection" id="{esc(sid)}">{head}{body}</section>')
    return (
        '<p class="muted">Every injection of each session (the newest 50): what the hooks added to the model\'s '
        "context at session start, on resume and after a compaction, each section's share of its tokens. A "
        "session's page shows each one's text.</p>" + "".join(parts)
    )
