"""Session records from everything the agent saw: prompts, tool calls and their results, the agent's own words.

Live hooks (a prompt submitted, a tool finished) and a transcript read at compaction produce the same records under
the same keys, so a record captured live is replaced, not repeated, when the transcript is read, and a second
compaction keeps what the first knew. A record is (kind, key) → text, status, source, ref, at; the latest write of a
key wins. Kinds:

- `prompt`: what a person typed (key: its text), `said`: the agent's latest messages;
- `rule`: a rule quoted from a spec the agent read (issue, PR, ticket, plan file), with its source and evidence ref, or
  from the context another hook added for the session (`from_hook_context`);
- `todo` (TodoWrite list, key `list`), `task` (TaskCreate/TaskUpdate, key: task id), `plan` (ExitPlanMode);
- `edit` (key: the file), `vcs` (commit and push as git reported them, `status`: the files git listed as changed),
  `check` (test, build, lint: passed/failed);
- `error` (key: tool and command, status open/resolved), `read` (a file read back) and `ran` (a command run):
  what verifies a write;
- `env` (key: what was missing): a command the shell could not find, and how it ran later (`environment`);
- `work_item` (key: the tracker's id, `status` as the agent set it with the tracker's command: `trackers`);
- `next` (the agent's latest list of next steps), `decision` (a sentence that chooses) and `finding` (what the work
  found out: a root cause, a limitation), in its own words.
No record holds a secret in clear: prompts, commands, error lines and quoted rules are redacted as evidence is
(`ctxkeep.tools.redaction.redact`), before anything is cut. Standard library only (per-event hooks).
"""

from __future__ import annotations

import json
import re

from ctxkeep.clients.core import commands, environment, git_state, statements, trackers
from ctxkeep.text import LazyPattern, match_key, one_line, without_bad_characters
from ctxkeep.tool_names import SERVER_NAME

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from ctxkeep.named_tuple import NamedTuple

MAX_TEXT = 4_000
_CUT_MARGIN = 4_096  # redacted past the cut, so a secret that straddles it is still seen whole
EDIT_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
PLAN_FILES = "/.claude/plans/"
_CREATED_ID = LazyPattern(r"#(\d+)|\btask (?:id )?(\d+)\b", re.IGNORECASE)
# Claude Code's built-in commands: typed, but not a request (a command with a prompt of its own, a skill, counts)
BUILT_IN_COMMANDS = frozenset(
    [
        "add-dir",
        "agents",
        "bashes",
        "bug",
        "clear",
        "compact",
        "config",
        "context",
        "cost",
        "doctor",
        "exit",
        "export",
        "help",
        "hooks",
        "ide",
        "init",
        "install-github-app",
        "login",
        "logout",
        "mcp",
        "memory",
        "model",
        "output-style",
        "permissions",
        "plugin",
        "pr-comments",
        "privacy-settings",
        "quit",
        "release-notes",
        "resume",
        "rewind",
        "sandbox",
        "security-review",
        "status",
        "statusline",
        "terminal-setup",
        "theme",
        "todos",
        "upgrade",
        "usage",
        "vim",
    ]
)
_NOT_TYPED = (
    "<task-notification>",
    "<bash-notification>",
    "<teammate-message",
    "<system-reminder>",
    "[Request interrupted",
    "Caveat:",
)
_PROMPT_FILE = LazyPattern(r"[\w./~-]*[\w-]\.(?:md|mdx|txt|rst|adoc|org|ya?ml|json|toml)\b")


class Record(NamedTuple):
    kind: str
    key: str
    text: str
    at: str
    status: str = ""
    source: str = ""
    ref: str = ""


class ToolEvent(NamedTuple):
    """One finished tool call, as a hook or a transcript shows it."""

    name: str
    input: dict[str, Any]
    output: str
    is_error: bool
    use_id: str
    at: str
    ref: str = ""  # the evidence the output was offloaded to, when it was


class Known:
    """What capture needs to remember between events of one session: task ids to subjects, errors still open."""

    def __init__(self) -> None:
        self.tasks: dict[str, str] = {}
        self.open_errors: dict[str, str] = {}  # error key -> how it failed (its error line)
        self.env: dict[str, tuple[str, str]] = {}  # what was missing -> (status, how it failed)
        self._files: set[str] = set()
        self._unread: list[str] = []  # prompts heard whose file names nobody asked for yet

    def heard(self, prompt: str) -> None:
        """Note the files a prompt names: reading one of them is reading the task's spec."""
        self._unread.append(prompt)

    @property
    def prompt_files(self) -> set[str]:
        """The file names (casefolded) the person's prompts mention; read from the prompts only when asked, since
        only a file read asks (a hook's Bash call does not pay for scanning every prompt of the session)."""
        for prompt in self._unread:
            self._files.update(name.rsplit("/", 1)[-1].casefold() for name in _PROMPT_FILE.findall(prompt))
        self._unread.clear()
        return self._files

    @prompt_files.setter
    def prompt_files(self, names: set[str]) -> None:
        self._files, self._unread = set(names), []


def digest(text: str) -> str:
    """A record key for a text (its matching form): two 32-bit checksums and the length, so no hashlib (OpenSSL) to load."""
    import zlib  # here: a tool call that makes no record by text costs no import

    data = match_key(text).encode("utf-8")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"


def unsecret(text: str) -> str:
    """`text` with every secret replaced by its marker."""
    if len(text) < 8:  # no secret is this short (the rules' own floor): a short command costs no import
        return text
    from ctxkeep.tools.redaction.redact import redact_secrets  # here: only a record's maker needs the rules

    return redact_secrets(text)[0]


def cut(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, redacted first, so no part of a secret is left at the cut."""
    return unsecret(text[: limit + _CUT_MARGIN])[:limit]


def clean(text: str, limit: int = MAX_TEXT) -> str:
    """Text as a record holds it: no control characters, no secrets, at most `limit` characters."""
    return cut(without_bad_characters(text), limit).strip()


def _stored(records: list[Record]) -> list[Record]:
    """Keys and sources made from commands and output lines, redacted too."""
    return [r._replace(key=unsecret(r.key), source=unsecret(r.source)) for r in records]


def is_request(text: str) -> bool:
    """Whether a prompt is something a person asked for: not a built-in command (/compact, /clear …), not a
    background task's notification or other text the client adds, not a JSON object a program wrote."""
    body = text.strip()
    if body.startswith(_NOT_TYPED) or _is_json_object(body):
        return False
    if body.startswith("/"):
        return body[1:].split(maxsplit=1)[0].casefold() not in BUILT_IN_COMMANDS if len(body) > 1 else False
    return True


def _is_json_object(body: str) -> bool:
    """A program's message (Claude Code queues a background task's notice as `{"task_id": …}`), not typed words."""
    if not (body.startswith("{") and body.endswith("}")):
        return False
    try:
        return isinstance(json.loads(body), dict)
    except ValueError:
        return False


# what an IDE extension adds to a prompt (the file open, the selection, its diagnostics): not the person's words
_IDE_CONTEXT = LazyPattern(r"<ide_([a-z_]{1,40})>.*?</ide_\1>", re.DOTALL)


def from_prompt(text: str, at: str, known: Known | None = None) -> list[Record]:
    """A prompt a person typed (or queued): one record, keyed by its text (`known` notes the files it names); what
    an IDE added to it is left out."""
    body = clean(_IDE_CONTEXT.sub("", text) if "<ide_" in text else text)
    if not body or not is_request(body):
        return []
    if known is not None:
        known.heard(body)
    return [Record("prompt", digest(body), body, at)]


_STANDING_HOOKS = ("SessionStart", "UserPromptSubmit")  # their context is about the session, not one tool call


def from_attachment(attachment: dict[str, Any], at: str) -> list[Record]:
    """The rules of what the client attached for the whole session: another hook's context (`from_hook_context`) or a
    memory file it loaded (a nested CLAUDE.md, a `~/.claude/rules/*.md`), read as a spec with its path as source."""
    if attachment.get("type") == "nested_memory" and isinstance(attachment.get("content"), dict):
        memory = attachment["content"]
        text, path = memory.get("content"), memory.get("path") or attachment.get("path")
        return from_loaded_text(text, f"the memory file {path}", at) if isinstance(text, str) else []
    return from_hook_context(attachment, at)


def from_loaded_text(text: str, source: str, at: str) -> list[Record]:
    """The negated rules of a text the client loaded into the session (a memory file), at most four, verbatim, quoted data with `source`: the agent was told them, the next context may not hold them, and
    a "do not" lost costs most (the rest of a long text would crowd out the rules the person gave)."""
    rules = [rule for rule in commands.spec_rules(text[:100_000]) if commands.is_negated_rule(rule)][:4]
    return _stored([Record("rule", digest(rule), clean(rule, 300), at, source=cut(source, 200)) for rule in rules])


def _hook_text(attachment: dict[str, Any]) -> str:
    """The context text of a hook's attachment: added context (a list or a string), or what a SessionStart hook
    printed (`hook_success`: plain text, or the JSON whose additionalContext the client added)."""
    given = attachment.get("content")
    if attachment.get("type") == "hook_success" and isinstance(given, str) and given.lstrip().startswith("{"):
        try:
            output = json.loads(given).get("hookSpecificOutput")
        except (ValueError, AttributeError):
            return ""
        given = output.get("additionalContext") if isinstance(output, dict) else None
    parts = given if isinstance(given, list) else [given]
    return "\n".join(c for c in parts if isinstance(c, str))  # text only: another shape is no context it can read


def from_hook_context(attachment: dict[str, Any], at: str) -> list[Record]:
    """The rules in context another hook added: for the whole session (a SessionStart or UserPromptSubmit hook: a mode
    to keep, a project's AGENTS.md), a short added context whole, a longer one or what a SessionStart hook printed
    read as a spec; at a tool call (PreToolUse, PostToolUse …), only context that asks something of the agent ("You
    MUST run `graphify query` before grepping"), whole when short. Quoted data with the hook as their source;
    ctxkeep's own context is no rule."""
    event = str(attachment.get("hookEvent") or attachment.get("hookName") or "").partition(":")[0]
    kind = attachment.get("type")
    standing = event in _STANDING_HOOKS
    if standing and not (kind == "hook_additional_context" or (kind == "hook_success" and event == "SessionStart")):
        return []
    if not standing and kind not in ("hook_additional_context", "hook_system_message"):
        return []
    source = f"the {event or 'a'} hook's context"
    return _hook_rules(
        _hook_text(attachment), source, at, whole_when_short=kind != "hook_success", asks_only=not standing
    )


_STOP_FEEDBACK = "Stop hook feedback:"


def from_hook_feedback(text: str, at: str) -> list[Record]:
    """What a Stop hook told the agent when it blocked the end of a turn (Claude Code shows it as a meta message):
    its rules, like any hook's at a tool call."""
    if not text.startswith(_STOP_FEEDBACK):
        return []
    body = text[len(_STOP_FEEDBACK) :]
    return _hook_rules(body, "the Stop hook's feedback", at, whole_when_short=True, asks_only=True)


def _hook_rules(text: str, source: str, at: str, whole_when_short: bool, asks_only: bool) -> list[Record]:
    """A hook's text as rules, whole when short and allowed; with `asks_only`, none unless a line is rule-shaped."""
    if not text.strip() or text.lstrip().startswith(SERVER_NAME):
        return []
    rules = commands.spec_rules(text)
    if asks_only and not rules:
        return []  # a hook's report about one call (a lint result, a rewrite): nothing it asks to keep doing
    flat = one_line(text, 10_000)
    whole = whole_when_short and len(flat) <= commands.MAX_RULE_CHARS and not commands.speaks_to_the_reader(flat)
    return _stored([Record("rule", digest(r), clean(r, 300), at, source=source) for r in ([flat] if whole else rules)])


def from_assistant(text: str, at: str) -> list[Record]:
    """The agent's words: the message itself, its list of next steps, the choices it states."""
    body = clean(text, 1_500)
    out = [Record("said", digest(body), body, at)] if len(body) >= 40 else []
    steps = [cut(step, 300) for step in statements.next_steps(text[:20_000])]
    if steps:
        out.append(Record("next", "latest", json.dumps(steps, ensure_ascii=False), at, source="the agent's message"))
    for sentence in statements.decisions(text[:20_000]):
        body = clean(sentence, 300)
        out.append(Record("decision", digest(body), body, at, source="the agent"))
    for sentence in statements.findings(text[:20_000]):
        body = clean(sentence, 300)
        out.append(Record("finding", digest(body), body, at, source="the agent"))
    return out


def _todo_records(event: ToolEvent, known: Known) -> list[Record]:
    data = event.input
    if event.name == "TodoWrite" and isinstance(data.get("todos"), list):
        todos = [
            {
                "content": one_line(cut(str(t.get("content") or ""), 1_000), 300),
                "status": str(t.get("status") or "pending"),
            }
            for t in data["todos"]
            if isinstance(t, dict) and str(t.get("content") or "").strip()
        ]
        return [Record("todo", "list", json.dumps(todos, ensure_ascii=False), event.at)]
    if event.name == "TaskCreate" and (data.get("subject") or data.get("description")):
        subject = one_line(cut(str(data.get("subject") or data.get("description")), 1_000), 300)
        found = _CREATED_ID.search(event.output)
        task_id = (found.group(1) or found.group(2)) if found else str(len(known.tasks) + 1)
        known.tasks[task_id] = subject
        return [Record("task", task_id, subject, event.at, status="pending")]
    if event.name == "TaskUpdate" and data.get("status"):
        task_id = str(data.get("taskId", "")).strip()
        subject = known.tasks.get(task_id) or one_line(cut(str(data.get("subject") or ""), 1_000), 300)
        return [Record("task", task_id, subject, event.at, status=str(data["status"]))] if task_id and subject else []
    return []


def _edit_records(event: ToolEvent) -> list[Record]:
    target = event.input.get(EDIT_TOOLS.get(event.name, ""))
    if not isinstance(target, str) or event.is_error:
        return []
    if PLAN_FILES in target:  # plan mode's own file: the plan, not project work
        content = event.input.get("content")
        return [Record("plan", "plan", clean(content), event.at, source=target)] if isinstance(content, str) else []
    out = [Record("edit", target, event.name, event.at)]
    names = added_names(event.input) if event.output.strip() else []  # no result seen yet: it may not have landed
    if names:
        key = f"{target}:{event.use_id or digest(' '.join(names))}"  # one per edit: two edits may add the same names
        out.append(Record("added", key, clean(" ".join(names), 600), event.at, source=target))  # a name may be a token
    return out


# a name a reader may need verbatim: a word of six characters or more shaped snake_case, camelCase or SCREAMING_CASE
# (two linear patterns: one nested pattern for both backtracks exponentially on a long mixed-case word)
_WORD = LazyPattern(r"\b[A-Za-z_][A-Za-z0-9_]{5,}\b")
_NAME_SHAPE = LazyPattern(r"[a-z0-9][A-Z]|[A-Za-z0-9]_[A-Za-z0-9]")
_DEFINED = LazyPattern(
    r"\b(?:def|class|function|const|let|var|type|interface|struct|enum|fn|func|trait|impl|module|table|column)\s+"
    r"(?:\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]{5,})"
)
MAX_NAMES = 6


def added_names(data: dict[str, Any]) -> list[str]:
    """The names an edit brought into a file (in its new text, not in the text it replaced); for a whole file
    written, the names it defines. At most MAX_NAMES, in the order they appear."""
    pairs = [(str(e.get("old_string") or ""), str(e.get("new_string") or "")) for e in data.get("edits") or []
             if isinstance(e, dict)]  # fmt: skip
    if isinstance(data.get("new_string"), str):
        pairs.append((str(data.get("old_string") or ""), data["new_string"]))
    if pairs:
        before = {m.group(0) for old, _ in pairs for m in _WORD.finditer(old[:20_000])}
        found = [m.group(0) for _, new in pairs for m in _WORD.finditer(new[:20_000])]
        names = [n for n in found if n not in before and _NAME_SHAPE.search(n)]
    elif isinstance(data.get("content"), str):
        names = [m.group(1) for m in _DEFINED.finditer(data["content"][:20_000])]
    else:
        return []
    return list(dict.fromkeys(names))[:MAX_NAMES]


def _bash_records(event: ToolEvent, known: Known) -> list[Record]:
    command = str(event.input.get("command") or "")
    shown = cut(command, 300)
    out = [Record("ran", event.use_id or digest(command), shown, event.at)]  # the gate: a written file was run
    kind = commands.check_kind(command)
    if kind:
        outcome = commands.check_outcome(event.output, event.is_error)
        detail = _failure(event.output) if outcome == "failed" else ""
        out.append(
            Record(
                "check",
                f"{kind}:{commands.command_head(unsecret(command), 4)}",
                shown,
                event.at,
                status=outcome,
                source=detail,
                ref=event.ref,
            )
        )
    return out + _git_records(command, event) + _env_records(command, event, known) + _tracker_records(command, event)


def _tracker_records(command: str, event: ToolEvent) -> list[Record]:
    """The status the agent set on a tracker's work item (`bd update X --status in_progress`), when the call worked."""
    if event.is_error:
        return []
    shown = cut(command, 200)
    items = [(cut(item, 120), cut(status, 40)) for item, status in trackers.status_changes(command)]
    return [Record("work_item", item, item, event.at, status=status, source=shown) for item, status in items]


def _failure(output: str) -> str:
    """How a check failed: its failure line and the first tests it names failing."""
    line = cut(commands.failure_line(output), 200)
    tests = [cut(name, 120) for name in commands.failing_tests(output)]
    return f"{line}; failing: {', '.join(tests)}" if tests and not all(t in line for t in tests) else line


def _git_records(command: str, event: ToolEvent) -> list[Record]:
    """What git printed: a commit (its hash and subject), a push, the files `git status` lists as changed."""
    out: list[Record] = []
    commit = git_state.commit_of(event.output) if "]" in event.output else None
    if commit:
        hash_, subject, branch = commit
        made = f"{hash_} {one_line(cut(subject, 200), 200)}"
        out.append(Record("vcs", "commit", made, event.at, "done", branch))
        out.append(Record("vcs", f"commit:{hash_}", made, event.at, "done", branch))  # every commit, for the list
        body = git_state.commit_body(command) if "commit" in command else ""
        out.append(Record("vcs", "commit_body", cut(body, 600), event.at, "done"))  # the latest commit's, or none
    action = commands.vcs_action(command) if not event.is_error else None
    if action == "commit" and not commit and not git_state.committed_nothing(event.output):
        out.append(Record("vcs", "commit", cut(command, 300), event.at, status="done"))  # its output was not shown
    opened = git_state.pull_request_of(command, event.output) if "/pull/" in event.output else None
    if opened and not event.is_error:
        url, title, body = opened
        made = f"{url} {one_line(cut(title, 200), 200)}".strip()
        out.append(Record("vcs", "pull_request", made, event.at, "done", cut(body, 800)))
    pushed = git_state.push_of(event.output) if "->" in event.output else None
    if (pushed or action == "push") and not event.is_error:
        out.append(Record("vcs", "push", pushed or cut(command, 300), event.at, status="done"))
    stopped = git_state.conflicts_of(event.output) if "onflict" in event.output else None
    if stopped is not None:
        files = ", ".join(p.rsplit("/", 1)[-1] for p in stopped[:8]) or "see git status"
        text = f"`{one_line(cut(command, 120), 120)}` stopped on conflicts ({files}): resolve them, then commit"
        out.append(Record("vcs", "conflict", text, event.at, status="open"))
    on_branch = git_state.branch_of(command, event.output) if not event.is_error and "git" in command else None
    on_branch = on_branch or (commit[2] if commit else None)
    if on_branch:
        out.append(Record("fact", "branch", cut(on_branch, 120), event.at, status="done", source="git"))
    listed = git_state.status_of(command, event.output) if not event.is_error else None
    if listed is not None:
        out.append(Record("vcs", "status", json.dumps(listed[:200], ensure_ascii=False), event.at, status="done"))
    return out


def _env_records(command: str, event: ToolEvent, known: Known) -> list[Record]:
    found = environment.facts(command, event.output, event.is_error, known.env)
    for key, _, status, failed_as in found:
        known.env[key] = (status, failed_as)
    return [Record("env", key, clean(text, 400), event.at, status, cut(how, 300)) for key, text, status, how in found]


_PROSE_KEYS = ("title", "body", "description", "text", "comment", "content")
_PROSE_FIELD = LazyPattern(r'"(?:title|body|description|text|comment)"\s*:\s*"((?:[^"\\]|\\.)*)"')
READ_ONLY_TOOLS = frozenset(("Read", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "NotebookRead", "ToolSearch"))


def _prose(output: str) -> str:
    """A spec's text: an API's JSON (`gh api …`, an issue tracker's MCP tool) read for its prose fields, else as is.
    JSON with no prose field that can be read whole has no prose: its lines are data, never rules."""
    if not output.lstrip().startswith(("{", "[")):
        return output
    data = _json_values(output)
    if not data:
        fields = _PROSE_FIELD.findall(output)  # cut short: the prose fields that are whole
        return "\n".join(json.loads(f'"{value}"') for value in fields)
    found: list[str] = []

    def walk(value: Any, depth: int) -> None:
        if depth > 6 or len(found) > 200:
            return
        if isinstance(value, dict):
            for key, inner in value.items():
                if key in _PROSE_KEYS and isinstance(inner, str):
                    found.append(inner)
                else:
                    walk(inner, depth + 1)
        elif isinstance(value, list):
            for inner in value:
                walk(inner, depth + 1)

    walk(data, 0)
    return "\n".join(found)


def _json_values(output: str) -> list[Any]:
    """The JSON values `output` holds one after another (paginated API output prints several), [] when it holds none."""
    decoder, at = json.JSONDecoder(), 0
    values: list[Any] = []
    text = output.strip()
    while at < len(text):
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError:
            return values
        values.append(value)
        while at < len(text) and text[at].isspace():
            at += 1
    return values


def _spec_records(event: ToolEvent, known: Known) -> list[Record]:
    # the file names the prompts mention are matched against a Read only: no other call pays for finding them
    named: set[str] | frozenset[str] = known.prompt_files if event.name == "Read" else frozenset()
    label = commands.reads_spec(event.name, event.input, named)
    if not label or event.is_error:
        return []
    rules = [unsecret(rule) for rule in commands.spec_rules(_prose(event.output))]
    return [Record("rule", digest(rule), rule, event.at, source=label, ref=event.ref) for rule in rules]


def _error_key(event: ToolEvent) -> str:
    target = event.input.get("command") or event.input.get("file_path") or event.input.get("pattern") or ""
    return f"{event.name}:{commands.command_head(unsecret(str(target)), 2)}"  # redacted first: quotes go at the split


_REJECTED = "The user doesn't want to proceed with this tool use"


def _rejected(event: ToolEvent) -> list[Record]:
    """A tool call the person refused (Claude Code's permission prompt): their decision, not an error of the work."""
    target = event.input.get("command") or event.input.get("file_path") or event.input.get("url") or ""
    what = "the plan the agent proposed (ExitPlanMode)" if event.name == "ExitPlanMode" else f"{event.name} `{target}`"
    text = clean(f"The user refused {one_line(what, 200)}", 300)
    return _stored([Record("decision", digest(text), text, event.at, source="the user")])


_ANSWER = LazyPattern(r'"((?:[^"\\]|\\.)+)"="((?:[^"\\]|\\.)*)"')


def _answers(event: ToolEvent) -> list[Record]:
    """The person's answers to the agent's questions (AskUserQuestion): decisions, in their words."""
    out = []
    for question, answer in _ANSWER.findall(event.output[:20_000]):
        text = clean(f"The user answered: {one_line(answer, 200)} — to the question: {one_line(question, 200)}", 500)
        out.append(Record("decision", digest(question), text, event.at, source="the user"))
    return _stored(out[:6])


def from_tool(event: ToolEvent, known: Known) -> list[Record]:
    """The records one finished tool call makes (none for a call of no consequence)."""
    if event.is_error and event.output.lstrip().startswith(_REJECTED):
        return _rejected(event)
    if event.is_error and _did_not_run(event.output):
        return []  # a call that never ran failed nothing: no check, no state of the work, nothing about this machine
    if event.name == "AskUserQuestion" and not event.is_error:
        return _answers(event)
    out = _todo_records(event, known) + _edit_records(event) + _spec_records(event, known)
    if event.name == "ExitPlanMode" and isinstance(event.input.get("plan"), str):
        out.append(Record("plan", "plan", clean(event.input["plan"]), event.at))
    if event.name == "Bash":
        out += _bash_records(event, known)
    if event.name == "Read" and isinstance(event.input.get("file_path"), str) and not event.is_error:
        out.append(Record("read", event.input["file_path"], "read", event.at))
        scripts = environment.package_scripts(event.input["file_path"], event.output)
        if scripts:
            out.append(Record("env", f"scripts:{event.input['file_path']}", clean(scripts, 400), event.at, "open"))
    key = _error_key(event)
    if event.is_error and (event.name in READ_ONLY_TOOLS or any(r.kind == "check" or r.key == "conflict" for r in out)):
        pass  # a file or page not found is no state of the work; a failed check's record says how it failed
    elif event.is_error:
        line = clean(error_line(event.output, shell=event.name == "Bash"), 300)
        out.append(Record("error", key, line, event.at, status="open", ref=event.ref))
        known.open_errors[key] = line
    elif key in known.open_errors:
        out.append(_got_past(event, key, known.open_errors.pop(key)))
    return _stored(out)


# what Claude Code answers for a call that did not run on its own merits: a parallel call failed first, or the
# permission prompt was cancelled
_NOT_RUN = ("Sibling tool call errored", "permission request failed: AbortError")


def _did_not_run(output: str) -> bool:
    head = output[:300]
    return any(reason in head for reason in _NOT_RUN)


_EXIT_CODE = LazyPattern(r"^(?:Exit code|exit status) \d+$")
_SAYS_WHAT_FAILED = LazyPattern(
    r"\b(?:error|fatal|fail(?:s|ed|ure)?|not found|unknown|invalid|expected|cannot|can't|could not|couldn't|unable|"
    r"missing|denied|refused|no such|not allowed|unrecognized|undefined|exception|has not been|traceback|"
    r"\w+(?:error|exception))\b",
    re.IGNORECASE,
)
_RAISED = LazyPattern(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)\b")  # a Python traceback's last line
_TOOL_ERROR_TAG = LazyPattern(r"</?tool_use_error>")


def says_what_failed(line: str) -> bool:
    """Whether a failed call's error line names a failure ("fatal: unknown revision", "No such file"), unlike a bare
    `Exit code 1` or the first line of what the command printed (a grep that matched nothing, a diff that differs)."""
    return _SAYS_WHAT_FAILED.search(line) is not None


def error_line(output: str, shell: bool) -> str:
    """The line of a failed call's output that says what went wrong: a tool's message is its first line; a shell's
    is the first that names an error among its first lines (not the client's `Exit code 1`; for a Python traceback,
    the exception it ends with), else its first line."""
    lines = [_TOOL_ERROR_TAG.sub("", line).strip() for line in output[:20_000].splitlines()]
    lines = [line for line in lines if line and not _EXIT_CODE.match(line)]
    named = next((line for line in lines[:60] if _SAYS_WHAT_FAILED.search(line)), None) if shell else None
    if named is not None and named.startswith("Traceback"):  # what was raised says more than where it started
        named = next((line for line in reversed(lines) if _RAISED.match(line)), named)
    return named or (lines[0] if lines else output.strip()[:300] or "error")


def _got_past(event: ToolEvent, key: str, failure: str) -> Record:
    """A call that works where the same call failed before: what failed and the call that worked are a fact about
    this machine or tool (`git diff A..B`: unknown revision, then it ran after a fetch), kept when the failure said
    what went wrong and the call that worked is one line; a bare `Exit code 1` (a grep that found nothing) or a
    script is only resolved."""
    command = str(event.input.get("command") or "")
    if not says_what_failed(failure) or "\n" in command.strip() or len(command) > 160:
        return Record("error", key, "", event.at, status="resolved")  # a script's lines: no one call that worked
    how = f"`{cut(command, 160)}`" if command else f"a later {event.name} call"
    return Record("error", key, failure, event.at, status="fixed", source=f"{how} worked")
