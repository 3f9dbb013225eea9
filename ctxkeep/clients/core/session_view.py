"""What a session's records add up to, and what any summary of the session must carry.

`derive(records)` gives the goal, the user's instructions (negated ones verbatim), the rules quoted from specs, what
is still pending (todos, tasks, plan steps not shown done), the state of the work (files edited since the last
commit, checks and their latest outcome, files edited since the last passing check, errors still open), the latest
substantive request and the agent's last words. `must_keep(view)` turns it into summary-check items. Standard
library only (per-event hooks).
"""

from __future__ import annotations

import json
import re

from ctxkeep.clients.core.capture import Record, is_request, says_what_failed
from ctxkeep.clients.core.commands import is_negated_rule
from ctxkeep.clients.core.git_state import same_file
from ctxkeep.clients.core.trackers import is_done
from ctxkeep.text import LazyPattern, match_key, one_line, value_key
from ctxkeep.tools.compaction_check import Item, Passages

MAX_INSTRUCTION_CHARS = 300
MAX_EARLIER_PROMPTS = 8
MAX_SAID = 12  # the agent's latest messages kept for a view without a summary
_TRIVIAL = LazyPattern(
    r"^(?:continue|go on|go ahead|keep going|carry on|proceed|yes|yep|yeah|ok(?:ay)?|sure|thanks?|thank you|"
    r"do it|please do|please continue|next|sounds good|lgtm|great|perfect|cool|y|fine|good)\W*$",
    re.I,
)
_INSTRUCTION = LazyPattern(
    r"^(?:no\b|nope\b|stop\b|don'?t\b|do not\b|never\b|always\b|avoid\b|make sure\b|instead\b|actually\b|rather\b|"
    r"remove\b|drop\b|skip\b|revert\b|undo\b)|\b(?:don'?t|do not|never|must|mustn'?t|always|make sure|instead of|avoid|"
    r"should not|shouldn'?t|no need to|too? much|i (?:don'?t|do not) (?:want|like|need)|let'?s not|i'?d rather|i prefer|"
    r"not (?:so )?useful|unnecessary|keep it|only)\b|不要|别再|不能|必须|禁止|务必",
    re.I,
)
_REPLY_MARK = 'In reply to "'  # a short instruction that refers back, after the prompt it answers
_REFERS_BACK = LazyPattern(r"\b(?:this|that|it|these|those|them|again)\b", re.I)
_NEGATED_SENTENCE = LazyPattern(
    r"\b(?:don'?t|do not|never|must not|mustn'?t|should not|shouldn'?t|avoid|no longer)\b|不要|不能|禁止", re.I
)
_SENTENCE = LazyPattern(r"(?<=[.!?。！？])\s+|\n+")
_PLAN_STEP = LazyPattern(
    r"^(?:[-*+]|\d+[.)]|- \[[ x]\]|#{2,4}\s+(?:step|phase|part)\b[^:]*:?)\s*(.+)$", re.I
)  # top-level steps only
_UNCOMMITTED = (
    r"\b(?:not|n't|never)\s+(?:yet\s+)?(?:been\s+)?(?:committed|pushed|commit)\b|\buncommitted\b|\bunpushed\b|"
    r"\bnothing\s+(?:is\s+|has\s+been\s+|was\s+)?(?:yet\s+)?committed\b|\bno\s+(?:git\s+)?commits?\s+(?:yet|made|so far)\b"
)
_CHECK_OPEN = r"(?:{kind}\w*)\W+(?:\w+\W+){{0,8}}?(?:fail|not (?:yet )?(?:run|pass)|pending|need|re-?run|broken|red)|(?:fail|run|re-?run)\w*\W+(?:\w+\W+){{0,6}}?{kind}"
_CHECK_WORDS = {"test": "test", "build": "(?:build|compil)", "lint": "(?:lint|credo|ruff|vet|format)"}


class View:
    """What a session's records add up to (see the module docstring)."""

    def __init__(self) -> None:
        self.goal: str | None = None
        self.instructions: list[str] = []
        self.rules: list[Record] = []
        self.pending: list[str] = []
        self.done: list[str] = []  # marked completed on the agent's todo list: its claim
        self.next_steps: list[str] = []  # the agent's latest "next steps" list, its words
        self.plan_superseded: bool = False  # a todo list written after the plan took its place
        self.decisions: list[Record] = []
        self.findings: list[Record] = []  # the agent's latest findings, its words
        self.env: list[Record] = []
        self.edits: list[str] = []
        self.commit_body = ""  # what the latest commit's message says after its subject
        self.pull_request: Record | None = None  # the latest one the agent opened: url and title; source: its body
        self.added: dict[str, list[str]] = {}  # file -> names its edits brought in, latest file first
        self.uncommitted: list[str] = []
        self.committed: bool = False
        self.status_seen: bool = False  # the uncommitted files come from a `git status` after the latest commit
        self.commit: Record | None = None
        self.commits: list[Record] = []  # the session's commits git reported, oldest first
        self.conflict: Record | None = None  # a merge or rebase git stopped on, with no commit since
        self.pushed: Record | None = None
        self.checks: list[Record] = []  # the latest run of each kind (test, build, lint)
        self.checked_since: list[str] = []  # kinds run since the last edit, with their outcome
        self.unverified: list[str] = []
        self.unchecked: bool = False  # no check at all ran after the unverified edits
        self.errors: list[Record] = []
        self.got_past: list[Record] = []  # failures a later call of the same kind got past (what worked)
        self.closed_items: list[str] = []  # work items the agent closed in a tracker
        self.request: str | None = None
        self.prompts: list[str] = []
        self.said: list[str] = []
        self.asked: list[str] = []  # questions the agent's last message put to the user
        self.plan: list[str] = []
        self.branch: str | None = None


def substantive(prompt: str) -> bool:
    return not _TRIVIAL.match(prompt.strip())


_LIST_MARK = LazyPattern(r"^(?:[-*+•]\s+)+")  # "- * **Philosophy**" and "**Philosophy**" are one sentence
_CODE_BLOCK = LazyPattern(r"^\s*(```|~~~)[^\n]*\n.*?^\s*\1\s*$", re.M | re.S)
_DOCUMENT = LazyPattern(r"^\s*(?:#{1,4}\s+\S|[-*+]\s+\S|\d+[.)]\s+\S)", re.M)


def instructions_of(prompt: str) -> list[str]:
    """A short prompt that instructs is kept whole; from a longer one, its negated sentences, verbatim; a prompt
    written as a document (headings, lists: a skill or command that expanded, a pasted spec) is read as a spec."""
    flat = one_line(prompt)
    if len(flat) <= MAX_INSTRUCTION_CHARS:
        return [flat] if _INSTRUCTION.search(flat) else []
    prompt = _CODE_BLOCK.sub("\n", prompt)  # code the prompt quotes (`// don't crash`) is the code's, not a rule
    sentences = [_LIST_MARK.sub("", one_line(s)) for s in _SENTENCE.split(prompt)]
    negated = [s for s in sentences if 12 <= len(s) <= MAX_INSTRUCTION_CHARS and _NEGATED_SENTENCE.search(s)][:5]
    if len(_DOCUMENT.findall(prompt)) < 3:
        return negated
    from ctxkeep.clients.core.commands import spec_rules

    return list(dict.fromkeys(negated + spec_rules(prompt)))[:12]


def _in_context(found: list[str], prompt: str, previous: str) -> list[str]:
    """A short instruction that refers back ("no, remove this again") with the prompt it answers."""
    if found == [one_line(prompt)] and len(prompt) <= 160 and _REFERS_BACK.search(prompt) and len(previous) <= 300:
        return [f'{_REPLY_MARK}{one_line(previous, 200)}": {one_line(prompt)}']
    return found


def _todos(records: list[Record]) -> list[tuple[str, str]]:
    """(item, status) of the latest todo list, or of the tasks when the session used TaskCreate/TaskUpdate."""
    tasks = sorted((r for r in records if r.kind == "task" and r.status != "deleted"), key=lambda r: r.at)
    if tasks:
        return [(r.text, r.status) for r in tasks]
    lists = sorted((r for r in records if r.kind == "todo"), key=lambda r: r.at)
    try:
        return [(str(t["content"]), str(t["status"])) for t in json.loads(lists[-1].text)] if lists else []
    except (ValueError, KeyError, TypeError):
        return []


def _plan(records: list[Record]) -> tuple[list[str], bool]:
    """The latest plan's steps, and whether a todo list or task written after it took its place."""
    plans = sorted((r for r in records if r.kind == "plan"), key=lambda r: r.at)
    if not plans:
        return [], False
    steps = [m.group(1).strip() for m in map(_PLAN_STEP.match, plans[-1].text.splitlines()) if m]
    later = any(r.kind in ("todo", "task") and r.at > plans[-1].at for r in records)
    return [one_line(s, 200) for s in steps if len(s) > 8 and not s.rstrip("*").endswith(":")], later


def _git(view: View, records: list[Record], edits: list[Record]) -> None:
    """Committed or not, from what git printed: a file is uncommitted when it was edited after the latest commit, or
    when the latest `git status` (after that commit) listed it and no commit came since."""
    vcs = {r.key: r for r in sorted((r for r in records if r.kind == "vcs"), key=lambda r: r.at)}
    view.commit, view.pushed = vcs.get("commit"), vcs.get("push")
    view.pull_request = vcs.get("pull_request")
    body = vcs.get("commit_body")
    view.commit_body = body.text if body and view.commit and body.at == view.commit.at else ""
    conflict = vcs.get("conflict")
    view.conflict = (
        conflict
        if conflict and conflict.at > max((r.at for r in (view.commit, vcs.get("clean")) if r), default="")
        else None
    )
    view.commits = [r for key, r in vcs.items() if key.startswith("commit:")][-6:]
    last_commit = max((r.at for r in (view.commit, view.pushed, vcs.get("clean")) if r), default="")
    view.committed = view.commit is not None or view.pushed is not None
    status = vcs.get("status")
    listed: list[str] = []
    if status is not None and status.at > last_commit:
        try:
            listed = [str(p) for p in json.loads(status.text)]
        except ValueError:
            listed = []
        last_commit = status.at
        view.status_seen = True
    dirty = [r.key for r in edits if any(same_file(r.key, p) for p in listed)]
    dirty += [p for p in listed if not any(same_file(r.key, p) for r in edits)]
    view.uncommitted = list(dict.fromkeys(dirty + [r.key for r in edits if r.at > last_commit]))


def _checks(view: View, records: list[Record], edits: list[Record]) -> None:
    """The latest run of each kind decides its outcome; an edit is verified by a later passing run of any kind."""
    checks = sorted((r for r in records if r.kind == "check"), key=lambda r: r.at)
    view.checks = list({r.key.split(":", 1)[0]: r for r in checks}.values())
    last_pass = max((r.at for r in checks if r.status == "passed"), default="")
    view.unverified = list(dict.fromkeys(r.key for r in edits if r.at > last_pass))
    last_edit = max((r.at for r in edits), default="")
    since = {r.key.split(":", 1)[0]: r.status for r in checks if r.at > last_edit}
    view.checked_since = [f"{kind} {status}" for kind, status in since.items()] if edits else []
    first_unverified = min((r.at for r in edits if r.key in view.unverified), default="")
    view.unchecked = bool(view.unverified) and not any(r.at > first_unverified for r in checks)


def _open_errors(records: list[Record]) -> list[Record]:
    """Errors not seen resolved that say what failed, leaving out a command the shell could not find (an environment
    fact says it); a non-zero exit with no error (`git check-ignore`, `diff`, a grep that found nothing) is no
    failure to state."""
    env = [r for r in records if r.kind == "env"]
    errors = sorted(
        (r for r in records if r.kind == "error" and r.status == "open" and says_what_failed(r.text)),
        key=lambda r: r.at,
    )
    return [e for e in errors if not any(r.source and r.source in e.key for r in env)][-5:]


def _work_state(view: View, records: list[Record]) -> None:
    edits = sorted((r for r in records if r.kind == "edit"), key=lambda r: r.at)
    view.edits = list(dict.fromkeys(r.key for r in edits))
    _git(view, records, edits)
    _checks(view, records, edits)
    view.errors = _open_errors(records)
    view.env = sorted((r for r in records if r.kind == "env" and r.status != "resolved"), key=lambda r: r.at)
    view.got_past = _got_past(records)
    view.added = _added(records)


def _added(records: list[Record], files: int = 6, names: int = 6) -> dict[str, list[str]]:
    """The names the latest edits brought into each file, the file edited last first."""
    out: dict[str, list[str]] = {}
    for r in sorted((r for r in records if r.kind == "added"), key=lambda r: r.at, reverse=True):
        if r.source in out or len(out) < files:
            out[r.source] = list(dict.fromkeys(out.get(r.source, []) + r.text.split()))[:names]
    return out


def _got_past(records: list[Record], keep: int = 3) -> list[Record]:
    """The latest failures a later call of the same kind got past, as facts: what failed, how, and what worked (a
    tool's failure once whatever file it was about); a check that failed run one way and then passed run another is
    one too (`pnpm test` at the root, then in a package's folder)."""
    latest: dict[tuple[str, str], Record] = {}
    for r in sorted((r for r in records if r.kind == "error" and r.status == "fixed"), key=lambda r: r.at):
        tool = r.key.partition(":")[0]
        latest[(tool, r.text if tool != "Bash" else r.key)] = r  # a tool's own refusal is one lesson for every file
    out = []
    for (tool, _), r in latest.items():
        head = r.key.partition(":")[2] if tool == "Bash" else ""  # a command says how; a file path says nothing more
        what = f"{tool} `{head}`" if head else tool
        out.append(r._replace(text=f"{what} failed: {r.text}; then {r.source}"))
    checks = sorted((r for r in records if r.kind == "check"), key=lambda r: r.at)
    for failed in (r for r in checks if r.status == "failed" and r.source):
        kind = failed.key.split(":", 1)[0]
        later = (r for r in checks if r.at > failed.at and r.status == "passed" and r.key.startswith(f"{kind}:"))
        passed = next(later, None)
        if passed is not None and passed.key != failed.key and "\n" not in passed.text:
            shown = (
                f"`{one_line(failed.text, 120)}` failed: {one_line(failed.source, 160)}; then `{passed.text}` passed"
            )
            out.append(failed._replace(text=shown, at=passed.at))
    return sorted(out, key=lambda r: r.at)[-keep:]


def _work_items(view: View, records: list[Record]) -> None:
    """A tracker's work items as the agent last set them: the ones not closed are pending, whatever a todo says."""
    items = sorted((r for r in records if r.kind == "work_item"), key=lambda r: r.at)
    opened = [r for r in items if not is_done(r.status)]
    view.pending += [f"{r.key}: {r.status} in the tracker (set with `{r.source}`), not closed since" for r in opened]
    view.closed_items = [r.key for r in items if is_done(r.status)]


def _next_steps(view: View, records: list[Record]) -> None:
    """The agent's latest list of next steps, when it came after the latest todo list (else the list says more)."""
    stated = next((r for r in records if r.kind == "next"), None)
    todos = max((r.at for r in records if r.kind in ("todo", "task")), default="")
    if stated is None or stated.at < todos:
        return
    try:
        steps = [str(s) for s in json.loads(stated.text)]
    except ValueError:
        return
    pending = Passages(view.pending)
    view.next_steps = [s for s in steps if pending.carrying(s) is None]


_PUSHBACK = LazyPattern(
    r"\b(?:instead|rather|actually|i (?:don'?t|do not) think|that'?s (?:not|wrong)|why not|better (?:to|if)|"
    r"i'?d prefer|let'?s (?:go with|use|keep|not)|go with|stick with|switch to)\b",
    re.I,
)


def _decisions(records: list[Record], prompts: list[str]) -> list[Record]:
    """Choices made in the conversation, the latest of each kind: the person's answers and refusals (at most 6),
    their pushback (a prompt that redirects, 4) and the agent's own sentences that choose (3)."""
    made = sorted((r for r in records if r.kind == "decision"), key=lambda r: r.at)
    pushed = [
        Record("decision", p, one_line(p, 300), "", source="the user")
        for p in prompts[1:]
        if len(p) <= 600 and _PUSHBACK.search(p)
    ]
    by_user = [r for r in made if r.source == "the user"]
    return by_user[-6:] + pushed[-4:] + [r for r in made if r.source != "the user"][-3:]


def derive(records: list[Record]) -> View:
    """The session's view from its records (any order; the latest record of a key is the one given)."""
    view = View()
    prompts = [
        r.text for r in sorted((r for r in records if r.kind == "prompt"), key=lambda r: r.at) if is_request(r.text)
    ]
    real = [p for p in prompts if substantive(p)]
    view.prompts = real
    view.goal = real[0] if real else None
    view.request = real[-1] if len(real) > 1 else None
    view.instructions = list(
        dict.fromkeys(i for n, p in enumerate(real[1:], 1) for i in _in_context(instructions_of(p), p, real[n - 1]))
    )
    view.instructions += [i for i in instructions_of(real[0]) if i not in view.instructions] if real else []
    rules = sorted((r for r in records if r.kind == "rule"), key=lambda r: r.at, reverse=True)  # the latest spec first
    view.rules = [r for r in rules if is_negated_rule(r.text)] + [r for r in rules if not is_negated_rule(r.text)]
    todos = _todos(records)
    view.done = [item for item, status in todos if status == "completed"]
    view.pending = [item for item, status in todos if status != "completed"]
    view.plan, view.plan_superseded = _plan(records)
    if not view.plan_superseded:
        done, pending = Passages(view.done), Passages(view.pending)
        view.pending += [s for s in view.plan if done.carrying(s) is None and pending.carrying(s) is None]
    _work_items(view, records)
    _next_steps(view, records)
    view.decisions = _decisions(records, real)
    view.findings = sorted((r for r in records if r.kind == "finding"), key=lambda r: r.at)[-6:]
    _work_state(view, records)
    said = sorted((r for r in records if r.kind == "said"), key=lambda r: r.at)
    view.said = [r.text for r in said[-MAX_SAID:]]
    if said and (not real or said[-1].at > max(r.at for r in records if r.kind == "prompt")):
        view.asked = [one_line(q, 300) for q in _SENTENCE.split(said[-1].text) if q.strip().endswith("?")][-2:]
    view.branch = next((r.text for r in records if r.kind == "fact" and r.key == "branch"), None)
    return view


def _files(paths: list[str], limit: int = 6) -> str:
    shown = ", ".join(p.rsplit("/", 1)[-1] for p in paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def state_items(view: View) -> list[Item]:
    """The state of the work a summary must say: uncommitted edits, failing or unrun checks, open errors."""
    items: list[Item] = []
    if view.uncommitted:
        if view.status_seen:
            what = "Not committed (the latest `git status` listed them, or they were edited after it)"
        elif view.commit is not None:
            what = f"Edited after the latest commit ({one_line(view.commit.text, 80)}), not committed since"
        else:
            what = "Not committed yet (no commit seen in this session)"
        items.append(
            Item(
                "state",
                f"{what}: {len(view.uncommitted)} file(s) ({_files(view.uncommitted)})",
                value=_UNCOMMITTED,
                source="git",
            )
        )
    if view.conflict is not None:
        items.append(
            Item("state", f"Not concluded: {view.conflict.text}", value=r"conflict|merge|rebase", source="git")
        )
    for check in view.checks:
        kind = check.key.split(":", 1)[0]
        if check.status == "failed":
            items.append(
                Item(
                    "state",
                    f"The latest {kind} run failed: `{one_line(check.text, 120)}`"
                    + (f" ({check.source})" if check.source else ""),
                    value=_CHECK_OPEN.format(kind=_CHECK_WORDS[kind]),
                    source="check",
                    ref=check.ref or None,
                )
            )
    if view.unverified and view.edits:
        what = (
            "No test, build or lint ran after these edits"
            if view.unchecked
            else "No passing test, build or lint run since these edits"
        )
        items.append(
            Item("state", f"{what}: {_files(view.unverified)}", value=_CHECK_OPEN.format(kind="test"), source="check")
        )
    for error in view.errors:
        items.append(
            Item(
                "state",
                f"Failed, and not run again successfully ({error.key}): {error.text}",
                source="tool",
                ref=error.ref or None,
            )
        )
    return items


def must_keep(view: View, limit_goal: int = 200) -> list[Item]:
    """Everything of the view a summary must carry, most harmful to lose first after the goal."""
    items: list[Item] = []
    if view.goal:
        items.append(Item("goal", one_line(view.goal.split("\n", 1)[0], limit_goal), source="first prompt"))
    items += [Item("constraint", text, source="user") for text in view.instructions]
    items += [Item("rule", r.text, source=r.source, ref=r.ref or None) for r in view.rules]
    items += [Item("env", r.text, source="the shell") for r in view.env]
    items += [Item("pending", text, source="todo list") for text in view.pending]
    items += [Item("pending", text, source="the agent's next steps") for text in view.next_steps]
    items += [Item("decision", r.text, source=r.source) for r in view.decisions]
    items += [Item("decision", r.text, source="the agent's finding") for r in view.findings]
    items += state_items(view)
    items += [Item("lesson", r.text, source="the shell") for r in view.got_past]
    if view.commit is not None:
        sha = view.commit.text.split(" ", 1)[0]
        if re.fullmatch(r"[0-9a-f]{7,40}", sha):
            items.append(Item("fact", f"Latest commit {one_line(view.commit.text, 160)}", value=sha, source="git"))
    commits = [c.text for c in view.commits if view.commit is None or c.text != view.commit.text][-5:]
    if commits:
        listed = "; ".join(one_line(text, 90) for text in commits)
        items.append(
            Item("fact", f"Earlier commits this session: {listed}", value=commits[-1].split(" ", 1)[0], source="git")
        )
    items += [Item("state", f"The agent asked the user: {q}", source="the agent's last message") for q in view.asked]
    if view.request:
        items.append(Item("request", one_line(view.request, 300), source="latest prompt"))
    shown = {one_line(view.request or "", 300)} | {i.split('": ', 1)[-1] for i in view.instructions}
    earlier = [p for p in view.prompts[1:-1][::-1] if len(p) <= 400 and one_line(p) not in shown][:MAX_EARLIER_PROMPTS]
    items += [Item("request", one_line(p, 400), source="an earlier prompt") for p in earlier]
    if view.branch and view.branch != "HEAD":
        items.append(Item("fact", f"Branch {view.branch}", value=view.branch.casefold(), source="git"))
    if view.pull_request is not None:
        url = view.pull_request.text.split(" ", 1)[0]
        items.append(Item("fact", f"Pull request opened: {view.pull_request.text}", value=match_key(url), source="gh"))
    return items


def _texts(value: object) -> list[str]:
    return [str(v) for v in value if isinstance(v, str)] if isinstance(value, list) else []


def task_items(state: dict[str, object], intents: list[tuple[str, str, str]], task_id: str = "") -> list[Item]:
    """What a summary must carry of the task the agent saved itself (its latest checkpoint, as stored JSON) and of
    its journaled side effects without a result."""
    goal = state.get("goal")
    items = [Item("goal", f"Task {task_id}: {goal}", source="task goal")] if isinstance(goal, str) and goal else []
    items += [Item("constraint", c, source="task constraint") for c in _texts(state.get("constraints"))]
    items += [Item("pending", p, source="task pending") for p in _texts(state.get("pending"))]
    items += [Item("completed", c, source="task completed") for c in _texts(state.get("completed"))]
    approvals = state.get("approvals") if isinstance(state.get("approvals"), list) else []
    for a in approvals if isinstance(approvals, list) else []:
        if isinstance(a, dict) and a.get("status", "pending") == "pending":
            items.append(Item("approval", str(a.get("action", "")), value=str(a.get("id", "")), source="task approval"))
    facts = state.get("facts") if isinstance(state.get("facts"), list) else []
    for f in facts if isinstance(facts, list) else []:
        if isinstance(f, dict) and f.get("critical", True) and "value" in f:
            unit = f" {f['unit']}" if f.get("unit") else ""
            items.append(
                Item("fact", f"{f.get('key')} = {f['value']}{unit}", value=value_key(f["value"]), source="task fact")
            )
    items += [
        Item(
            "state",
            f"Side effect journaled without a result: {key} ({action} → {target}); look it up before retrying",
            value=re.escape(key),
            source="journal",
        )
        for key, action, target in intents
    ]
    return items
