"""The viewer's task pages: the overview (tasks, what waits for a person, the latest working sets and injections), a
task (its version timeline, verification, the working set it was given, its journal, its resume brief) and the diff
between any two versions. Each function returns the page body; `html.page` wraps it."""

from __future__ import annotations

from ctxkeep.cli.journal_commands import outcome
from ctxkeep.cli.ui.data import Overview, TaskView, Version
from ctxkeep.cli.ui.html import Html, bar, esc, href, ident, link, pre_with_refs, ref_link, section, table, when
from ctxkeep.cli.ui.sessions import sessions_table
from ctxkeep.models.checkpoint import CheckpointDiffResult
from ctxkeep.models.delivered import DeliveredWorkingSet
from ctxkeep.models.journal import Action


def _task_link(task_id: str) -> Html:
    return f'<a class="ident" href="{href("/task", id=task_id)}">{esc(task_id)}</a>'


def _approval(a_id: str, action: str, detail: str) -> Html:
    return f'<span class="tag pending">pending</span> approval <strong>{esc(a_id)}</strong>: {esc(action)}{esc(detail)}'


def _intent(entry: Action) -> Html:
    return (
        f'<span class="tag open">open</span> {ident(entry.idempotency_key)} '
        f"{esc(entry.action)} → {esc(entry.target)} (task {link('/task', entry.task_id, id=entry.task_id)}, intended "
        f"{when(entry.intent_at)}): outcome unknown, check the system of record before retrying"
    )


def attention(approvals: list[tuple[str, Html]], intents: list[Action]) -> Html:
    """What waits for a person, highlighted; nothing when nothing waits."""
    if not approvals and not intents:
        return ""
    items = [f'<li class="approval">{html} (task {link("/task", task, id=task)})</li>' for task, html in approvals]
    items += [f'<li class="intent">{_intent(entry)}</li>' for entry in intents]
    return (
        f'<div class="attention" id="attention"><h2>Waiting for a person: {len(approvals)} approval(s), '
        f"{len(intents)} open intent(s)</h2><ul>{''.join(items)}</ul></div>"
    )


def slot_bars(shown: DeliveredWorkingSet) -> Html:
    """Each slot's tokens as a share of the budget, then the total."""
    bars = [
        bar(b.slot, b.tokens, shown.budget_tokens, f" (of {shown.slot_budgets.get(b.slot, 0):,} allowed)")
        for b in shown.blocks
    ]
    bars.append(bar("total", shown.tokens_total, shown.budget_tokens, f" of a {shown.budget_tokens:,}-token budget"))
    return f'<div class="bars working-set" data-task="{esc(shown.task_id)}">{"".join(bars)}</div>'


def working_set(shown: DeliveredWorkingSet | None) -> Html:
    if shown is None:
        return (
            '<p class="muted">No working set recorded with its slots yet (build_working_set keeps one per task; '
            "those built by an older ctxkeep have no slot account).</p>"
        )
    refs = ", ".join(ref_link(ref) for ref in shown.evidence_refs) or "none"
    memories = ", ".join(f'<a href="/memories#{esc(m)}">{esc(m)}</a>' for m in shown.memory_ids) or "none"
    lines = "".join(f"<li>{esc(line)}</li>" for line in shown.state_lines)
    return (
        f"<p>Built {when(shown.built_at)} from version {shown.version}, {esc(shown.format)}, focus "
        f"<q>{esc(shown.focus)}</q>.</p>{slot_bars(shown)}<p>Evidence shown: {refs}</p><p>Memories shown: {memories}</p>"
        f"<details><summary>{len(shown.state_lines)} state line(s) shown</summary><ul>{lines}</ul></details>"
    )


def overview_page(view: Overview) -> Html:
    approvals = [
        (w.task_id, _approval(w.approval.id, w.approval.action, _amount(w.approval.amount, w.approval.currency)))
        for w in view.approvals
    ]
    tasks = table(
        ["task", "version", "updated", "pending", "approvals waiting", "goal"],
        [
            (
                _task_link(t.task_id),
                esc(t.latest_version),
                when(t.updated_at),
                esc(t.pending),
                f'<span class="bad">{t.pending_approvals}</span>' if t.pending_approvals else "0",
                esc(t.goal[:160]),
            )
            for t in view.tasks
        ],
        "tasks",
    )
    more = (
        '<p class="muted">Older tasks are not shown (`ctxkeep tasks --limit` lists them).</p>'
        if view.more_tasks
        else ""
    )
    sets = "".join(f"<h3>{link('/task', s.task_id, id=s.task_id)}</h3>{slot_bars(s)}" for s in view.working_sets[:5])
    search = (
        '<form class="inline" action="/evidence" method="get"><input type="search" name="q" '
        'placeholder="search the evidence" aria-label="search the evidence"><button>Search</button></form>'
    )
    return (
        attention(approvals, view.open_intents)
        + section(f"Tasks ({len(view.tasks)})", tasks + more if view.tasks else '<p class="muted">No tasks yet.</p>')
        + section("Latest working sets", sets or '<p class="muted">None recorded yet.</p>')
        + section(
            f"Sessions the hooks saw ({len(view.sessions)})",
            '<p class="muted">With a checkpoint or not; each session\'s page shows every injection, each offloaded '
            "tool output beside its ref and each gate block with its reason.</p>" + sessions_table(view.sessions),
        )
        + section("Evidence", search)
    )


def _amount(amount: float | None, currency: str | None) -> str:
    return f" ({amount:,} {currency or ''})".replace(" )", ")") if amount is not None else ""


def _verdict(v: Version) -> Html:
    if not v.violations:
        return '<span class="ok">verified</span>'
    rules = "; ".join(f"{x.rule}: {x.item}" for x in v.violations[:5])
    return (
        f'<span class="bad">saved with {len(v.violations)} violation(s)</span> <span class="muted">{esc(rules)}</span>'
    )


def timeline(task_id: str, versions: list[Version], first_shown: int) -> Html:
    rows = [
        (
            f"v{v.version}",
            when(v.created_at),
            esc(v.trigger),
            _verdict(v),
            esc(
                ", ".join(
                    p
                    for p in (
                        f"by {v.author}" if v.author else "",
                        f"lease {v.owner}" if v.owner else "",
                        f"took over {v.took_over}" if v.took_over else "",
                        f"goal changed: {v.goal_change_reason}" if v.goal_change_reason else "",
                    )
                    if p
                )
            ),
            ident(v.hash[:12]),
            link(
                "/diff", f"diff v{v.version - 1} → v{v.version}", id=task_id, **{"from": v.version - 1, "to": v.version}
            )
            if v.version > 1
            else "",
        )
        for v in versions
    ]
    older = f'<p class="muted">Versions before v{first_shown} are not shown.</p>' if first_shown > 1 else ""
    return table(["version", "saved", "trigger", "verification", "who, why", "hash", ""], rows, "timeline") + older


def diff_form(task_id: str, latest: int, chosen: tuple[int, int] | None = None) -> Html:
    """Two versions to compare: an older one (v1 to the one before the latest) with a newer one (v2 to the latest);
    nothing to compare for a task with one version."""
    if latest < 2:
        return '<p class="muted">One version so far: nothing to compare yet.</p>'
    low, high = chosen or (latest - 1, latest)

    def options(versions: range, selected: int) -> str:
        return "".join(
            f'<option value="{n}"{" selected" if n == selected else ""}>v{n}</option>' for n in reversed(versions)
        )

    return (
        f'<form class="inline diff-form" action="/diff" method="get"><input type="hidden" name="id" value="{esc(task_id)}">'
        f'Compare <select name="from" aria-label="older version">{options(range(1, latest), low)}</select> with '
        f'<select name="to" aria-label="newer version">{options(range(2, latest + 1), high)}</select>'
        "<button>Diff</button></form>"
    )


def _journal(entries: list[Action]) -> Html:
    if not entries:
        return '<p class="muted">No side effects journaled for this task.</p>'
    return table(
        ["intended", "key", "action", "target", "outcome"],
        [
            (
                when(e.intent_at),
                ident(e.idempotency_key),
                esc(e.action),
                esc(e.target),
                f'<span class="bad">{esc(outcome(e))}</span>' if e.status == "open" else esc(outcome(e)),
            )
            for e in entries
        ],
        "journal",
    )


def _checks(view: TaskView) -> Html:
    checks = view.loaded.resume_checks
    chain = (
        '<li class="ok">the hash chain of every version verifies</li>'
        if not view.chain_problems
        else "".join(f'<li class="bad">{esc(p)}</li>' for p in view.chain_problems)
    )
    warnings = "".join(f"<li>{esc(w)}</li>" for w in checks.warnings)
    flagged = sum(1 for v in view.versions if v.violations)
    saved = (
        f'<li class="bad">{flagged} shown version(s) were saved with violations (a non-strict save)</li>'
        if flagged
        else '<li class="ok">every shown version passed verification when it was saved</li>'
    )
    return f'<ul class="checks">{chain}{saved}{warnings}</ul>'


def task_page(view: TaskView) -> Html:
    loaded, state = view.loaded, view.loaded.state
    approvals = [
        (loaded.task_id, _approval(a.id, a.action, _amount(a.amount, a.currency)))
        for a in state.approvals
        if a.status == "pending"
    ]
    intents = [entry for entry in view.journal if entry.status == "open"]
    head = (
        f"<p><strong>Goal:</strong> {esc(state.goal)}</p><p><strong>Next action:</strong> "
        f"{esc(state.next_action or '(not recorded)')} · phase {esc(state.phase or '(none)')} · latest v{loaded.version}</p>"
    )
    return (
        head
        + attention(approvals, intents)
        + section(
            "Timeline",
            diff_form(loaded.task_id, loaded.version) + timeline(loaded.task_id, view.versions, view.first_shown),
        )
        + section("Verification", _checks(view))
        + section("The working set it was last given", working_set(view.working_set))
        + section("Journal", _journal(view.journal))
        + section("Resume brief (what checkpoint_load gives the model)", pre_with_refs(loaded.brief))
    )


def diff_page(task_id: str, latest: int, result: CheckpointDiffResult) -> Html:
    marks = {"added": "+", "removed": "−", "changed": "~"}
    rows = [
        (
            f'<span class="op-{c.op}">{marks[c.op]}</span>',
            esc(c.field),
            esc(c.item),
            esc("" if c.before is None else c.before),
            esc("" if c.after is None else c.after),
        )
        for c in result.changes
    ]
    body = table(["", "field", "item", "before", "after"], rows, "diff") if rows else '<p class="muted">No change.</p>'
    return (
        f"<p>{link('/task', f'← {task_id}', id=task_id)} · v{result.from_version} → v{result.to_version}: "
        f"{len(result.changes)} change(s)</p>"
        + diff_form(task_id, latest, (result.from_version, result.to_version))
        + body
    )
