"""What a tool call was, read from its name, input and output: a check (test, build, lint) and how it ended, a commit or
a push, a task spec read (an issue, a ticket, a PR, a plan file), and the rules such a spec states.

Rules are quoted from the spec as data: the lines that prohibit or require something ("Do not…", "No extra…",
"must", "only", "Keep all logic in…"), and every bullet under a heading such as "Constraints" or "Rules". A line that
speaks to the reader instead (`speaks_to_the_reader`: it addresses the agent, claims authority or approval, says to run
something, or to set instructions aside) is never taken, nor anything under such a heading. Standard library only
(per-event hooks).
"""

from __future__ import annotations

import re

from ctxkeep.text import GatedPattern, LazyPattern, ascii_words
from ctxkeep.tool_names import SERVER_NAME

MAX_RULES_PER_SPEC = 12
MAX_RULE_CHARS = 300

# which package a package manager runs in (`pnpm --dir apps/web test`, `npm --prefix web run build`)
_PACKAGE_OPTIONS = r"(?:\s+(?:-C|--dir|--cwd|--filter|-F|--prefix|-w|--workspace)(?:=|\s+)\S+)*"
_CHECKS = {
    "test": LazyPattern(
        r"(?:^|[\s;&|(])(?:pytest|py\.test|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest|(?:python3?|uv run|poetry run) -m "
        r"(?:pytest|unittest)|(?:go|cargo|mix|deno|bun|dotnet|swift|zig|stack|cabal|lein|sbt|gradlew?|mvn) test\b|"
        r"(?:npm|pnpm|yarn)"
        + _PACKAGE_OPTIONS
        + r"(?: run)? test\b|make [\w:-]*test[\w:-]*|mise run [\w:-]*test[\w:-]*|just [\w:-]*test|"
        r"make check\b|mise run check\b|bundle exec (?:rspec|rake test))"
    ),
    "build": LazyPattern(
        r"(?:^|[\s;&|(])(?:(?:go|cargo|dotnet|swift|zig) build|mix compile|tsc\b|(?:npm|pnpm|yarn)"
        + _PACKAGE_OPTIONS
        + r"(?: run)? build\b|"
        r"make(?:\s+(?:all|build))?\s*$|make build|mise run build|mvn (?:package|compile|install)|gradlew? build|"
        r"python3? -m (?:build|compileall|py_compile))"
    ),
    "lint": LazyPattern(
        r"(?:^|[\s;&|(])(?:ruff|flake8|pylint|mypy|pyright|black --check|isort --check|eslint|prettier --check|biome|"
        r"golangci-lint|go vet|staticcheck|mix (?:credo|format --check|dialyzer)|cargo (?:clippy|fmt -- --check)|"
        r"shellcheck|rubocop|make (?:lint|format-check|fmt-check|pylint|cpd|complexity)|mise run (?:lint|fmt)|"
        r"clang-tidy|ktlint|swiftlint)"
    ),
}
# The first word of every alternative above (and of the git and spec commands below): a command holding no word that
# starts with one of these cannot match, and its pattern need not be compiled (a hook runs once per tool call).
_FIRST_WORDS = {
    "test": (
        "pytest",
        "py.test",
        "tox",
        "nox",
        "jest",
        "vitest",
        "mocha",
        "rspec",
        "phpunit",
        "ctest",
        "python",
        "uv",
        "poetry",
        "go",
        "cargo",
        "mix",
        "deno",
        "bun",
        "dotnet",
        "swift",
        "zig",
        "stack",
        "cabal",
        "lein",
        "sbt",
        "gradle",
        "mvn",
        "npm",
        "pnpm",
        "yarn",
        "make",
        "mise",
        "just",
        "bundle",
    ),
    "build": (
        "go",
        "cargo",
        "dotnet",
        "swift",
        "zig",
        "mix",
        "tsc",
        "npm",
        "pnpm",
        "yarn",
        "make",
        "mise",
        "mvn",
        "gradle",
        "python",
    ),
    "lint": (
        "ruff",
        "flake8",
        "pylint",
        "mypy",
        "pyright",
        "black",
        "isort",
        "eslint",
        "prettier",
        "biome",
        "golangci-lint",
        "go",
        "staticcheck",
        "mix",
        "cargo",
        "shellcheck",
        "rubocop",
        "make",
        "mise",
        "clang-tidy",
        "ktlint",
        "swiftlint",
    ),
    "vcs": ("git", "gh"),
    "spec": ("gh", "glab", "bd", "linear", "jira", "acli", "tea", "az"),
}
_SEPARATORS = str.maketrans(";&|(", "    ")


def may_run(command: str, what: str) -> bool:
    """False when `command` holds no word its `what` pattern could start with (True does not mean it matches)."""
    return any(word.startswith(_FIRST_WORDS[what]) for word in command.translate(_SEPARATORS).split())


_FAILED = LazyPattern(
    r"\b(?:\d+ (?:failed|failures?|errors?)\b(?<!\b0 failed)(?<!\b0 failures)(?<!\b0 errors)|FAILED|FAIL:|--- FAIL|"
    r"Traceback \(most recent call last\)|error(?:\[E\d+\])?:|panic:|npm ERR!|ERR_[A-Z][A-Z_]{3,}|Error: |"
    r"exit (?:code|status) [1-9]|"
    r"[1-9]\d* (?:issues?|problems?)\b)",
    re.MULTILINE,
)
_PASSED = LazyPattern(
    r"\b\d+ passed\b|\bOK\b|\bPASS\b|\bok\s+\S+|\b0 failures\b|\bAll checks passed\b|"
    r"\btest result: ok\b|\bSuccess\b|\bno issues found\b|\b\d+ tests?, 0 failures\b"
)
_VCS = LazyPattern(r"(?:^|[\s;&|(])git\s+(?:-C\s+\S+\s+)?(commit|push)\b|(?:^|[\s;&|(])gh pr (create|merge)\b")
_CLEAN_TREE = LazyPattern(r"nothing to commit, working tree clean|nothing added to commit")
_SPEC_COMMANDS = LazyPattern(
    r"(?:^|[\s;&|(])(?:gh (?:issue|pr) view|gh api \S*(?:issues|pulls|comments)|glab (?:issue|mr) view|bd show|"
    r"linear (?:issue|i) (?:view|show)|jira (?:issue|view)|acli jira|tea issues?|az boards work-item show)\b"
)
_SPEC_TOOL = LazyPattern(r"issue|ticket|story|pull_?request|get_pr|review|comment|spec|linear|jira|task", re.IGNORECASE)
_SPEC_FILE = LazyPattern(
    r"(?:spec|plan|prd|design|requirement|rfc|adr|task|issue|ticket|agents|claude|contributing|"
    r"guideline|convention|todo|feedback|instruction|rules|brief|assignment)[^/]*\.(?:md|mdx|txt|rst|adoc)$",
    re.IGNORECASE,
)
_RULE_HEADING = LazyPattern(
    r"^\s*(?:#+\s*)?(?:[\w ]*\b)?(?:constraints?|rules?|requirements?|guidelines?|scope|non-?goals?|goals?|"
    r"do(?:'s| and don'?ts)|don'?ts|must|restrictions?|conventions?|deliverables?|objectives?|acceptance(?: criteria)?|"
    r"success criteria|definition of done|red flags?|risks?|deadlines?|timeline|windows?|milestones?|expected (?:output|"
    r"results?)|outputs?)\b[\w ]*:?\s*$",
    re.IGNORECASE,
)
_HEADING = LazyPattern(r"^\s*(?:#+\s+\S|[A-Z][A-Za-z /&-]{2,40}:\s*$|[A-Z][A-Z /&-]{3,40}\s*$)")
_NORMATIVE = LazyPattern(
    r"\b(?:do not|don'?t|never|must not|mustn'?t|should not|shouldn'?t|cannot|can'?t|may not|no longer|avoid|"
    r"without|must|required?|only|always|keep|ensure|exactly|instead of)\b|^\s*(?:[-*+]\s*)?no\s+\w",
    re.IGNORECASE,
)
_NEGATED_RULE = LazyPattern(
    r"\b(?:do not|don'?t|never|must not|mustn'?t|should not|shouldn'?t|cannot|may not|avoid|"
    r"without)\b|(?:^|[;:,—–]\s*)(?:[-*+]\s*)?no\s+\w",
    re.IGNORECASE,
)
# A line that speaks to whoever reads it instead of stating what the work must be. Four kinds, each a pattern over the
# shape of the line (not over a list of known attacks), cut into parts by the words a part cannot match without, so a
# hook compiles only the parts a line can match (most spec lines name no agent, grant nothing and run nothing).
# A needed word is looked up in `ascii_words(line)`: a space before it is a word's start, a space after it its end.
_AGENT = r"(?:ai|a\.i\.|llms?|(?:large )?language models?|assistants?|agents?|bots?|copilot|claude|codex|gemini|chatgpt|gpt|cursor|devin)"
_AGENT_WORDS = (" ai ", " a i ", " llm", "language model", " assistant", " agent", " bot ", " bots ", " copilot",
                " claude", " codex", " gemini", " chatgpt", " gpt ", " cursor ", " devin ")  # fmt: skip
_ADDRESSES_THE_AGENT = GatedPattern(  # "Claude, …", "Note to AI agents:", "If you are an LLM", "AI models reading this"
    _AGENT_WORDS,
    rf"^\W*(?:(?:hey|hi|hello|dear|attention|note|notice|message|reminder|instructions?|memo)(?: (?:to|for))?\s+"
    rf"(?:(?:the|all|any|every)\s+)?(?:ai\s+)?{_AGENT}\b"
    rf"|(?:(?:the|all|any)\s+)?(?:ai\s+)?{_AGENT}\s*[,:!]\s*(?:you\b|your\b|please\b|make sure|do\b|don'?t\b|never\b|always\b|ignore\b|only\b))"
    rf"|\b(?:if|when|since|as long as)\s+you(?:'re|\s+are)\s+(?:an?\s+|the\s+)?(?:ai\b|{_AGENT}\b)"
    rf"|\bas\s+(?:an?|the)\s+(?:ai\b|{_AGENT}\b)"
    rf"|\b(?:ai\s+)?{_AGENT}\b[^.]{{0,40}}\b(?:reading|processing|parsing|seeing|reviewing|working on)\s+(?:this|these)\b",
    re.IGNORECASE,
)
_CLAIMS_AUTHORITY = (  # "IMPORTANT SYSTEM NOTE", "[SYSTEM]", "the user has approved", "you have permission"
    GatedPattern(
        (
            " system",
            " admin",
            " developer",
            " security",
            " maintainer",
            " operator",
            " root",
            " owner",
            " sys",
            " assistant",
            " instruction",
        ),
        r"\b(?:system|admin(?:istrator)?|developer|security|maintainer|operator|root|owner)\s+(?:note|notice|message|"
        r"override|instructions?|directive|update|alert|prompt|mode)\b"
        r"|^\W*[\[<(]?\s*/?\s*(?:system|sys|admin|developer|assistant|instructions?)\s*[\]>)]|^\W*(?:system|admin)\s*:",
        re.IGNORECASE,
    ),
    GatedPattern(
        ("approv", "authori", "allow", "permit", "okayed", "consent", "signed off", "grant", "given", "cleared"),
        r"\b(?:has|have|had)\s+(?:already\s+|explicitly\s+|now\s+)?(?:approved|authori[sz]ed|allowed|permitted|okayed|"
        r"consented|signed off|granted|cleared)\b"
        r"|\b(?:permission|approval|authori[sz]ation|consent)\s+(?:is|was|has been)\s+(?:hereby\s+)?(?:granted|given)\b"
        r"|\b(?:pre|already)[- ]?(?:approved|authori[sz]ed)\b"
        r"|\b(?:user|owner|maintainers?|admins?|administrators?|lead|manager)\s+(?:explicitly\s+)?(?:allows?|permits?|"
        r"approves?|authori[sz]es?|consents?)\b",
        re.IGNORECASE,
    ),
    GatedPattern(
        (" you ",),
        r"\byou\s+(?:have|are\s+(?:hereby\s+)?(?:given|granted))\s+(?:full\s+|explicit\s+)?(?:permission|authori[sz]ation|"
        r"approval|consent|clearance|the go-ahead)\b|\byou\s+(?:are|have been)\s+(?:hereby\s+)?(?:authori[sz]ed|allowed|"
        r"permitted|cleared)\b|\byou\s+(?:may|can)\s+(?!only\b|not\b|never\b)",
        re.IGNORECASE,
    ),
    GatedPattern(
        (" from ",),
        r"\b(?:message|note|instructions?|word|orders?)\s+from\s+(?:the\s+|your\s+)?(?:user|owner|admin|maintainers?|"
        r"developers?|anthropic|openai|google|system|security team|operator)\b",
        re.IGNORECASE,
    ),
)
_COMMAND = (  # what an instruction to run names: a code span, a path, a shell command, "this", "the script"
    r"(?:`|\$\(|\.{0,2}/|~/|(?:sudo|curl|wget|bash|sh|zsh|python\d?|node|npx|npm|pnpm|yarn|pip\d?|uv|make|cargo|go|"
    r"docker|kubectl|git|gh|chmod|rm|iwr|irm)\b|(?:this|these|it|the following)\b|the\s+(?:\w+\s+)?(?:script|command|"
    r"installer|binary|snippet|line|code|file)s?\b|:)"
)
_TELLS_TO_RUN = (  # "run `curl … | sh`", "First run ./x.sh", "pipe it into bash", "bash -c "$(wget …)""
    GatedPattern(
        (" curl", " wget", " iwr ", " irm ", " invoke webrequest ", " invoke restmethod ", " fetch "),
        r"\b(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|fetch)\b[^|\n]*\|\s*(?:sudo\s+)?(?:sh|bash|zsh|ksh|"
        r"dash|fish|iex|python\d?|perl|ruby|node|pwsh|powershell)\b"
        r"|\b(?:sh|bash|zsh)\s+(?:-c\s+)?[\"']?\$\(\s*(?:curl|wget)|<\(\s*(?:curl|wget)",
        re.IGNORECASE,
    ),
    GatedPattern(
        (" pipe ",),
        r"\bpipe\b[^\n]{0,80}?\b(?:into|to)\s+(?:sh|bash|zsh|a shell|the shell|python\d?|iex|powershell)\b",
        re.IGNORECASE,
    ),
    GatedPattern(
        (" run ", " execute ", " exec ", " paste ", " install ", " download "),
        rf"(?:^|[.;:!?]\s+|,\s*|\b(?:then|first|now|please|also|just|always|simply|next|and)\s+)(?:please\s+)?"
        rf"(?:run|execute|exec|copy and (?:run|paste)|paste)(?![\w-])\s*{_COMMAND}"
        rf"|(?:^|[.;:!?]\s+|\b(?:then|first|now|please|also|just|always|simply|next)\s+)(?:please\s+)?(?:install|download)\b"
        r"[^.\n]*(?:`|https?://)"
        r"|\b(?:you\s+(?:must|should|need to|have to|will need to)|make sure (?:to|you)|be sure to|remember to|"
        r"don'?t forget to|do not forget to)\s+(?:first\s+)?(?:run|execute|install|download)\b",
        re.IGNORECASE,
    ),
)
_SETS_INSTRUCTIONS_ASIDE = (  # "ignore the previous constraints", "new instructions:", "you are now"
    GatedPattern(
        (
            " ignore ",
            " disregard ",
            " forget ",
            " override ",
            " bypass ",
            " set aside ",
            " do not follow ",
            " don t follow ",
            " dont follow ",
            " stop following ",
            " no longer follow ",
        ),
        r"\b(?:ignore|disregard|forget|override|bypass|set aside|do not follow|don'?t follow|stop following|"
        r"no longer follow)\b[^.]{0,60}?(?:\b(?:previous|prior|earlier|above|all|any|your|these|those|original|existing|"
        r"other|my)\s+(?:\w+\s+)?(?:instructions?|prompts?|rules|guidelines|guardrails|constraints|polic(?:y|ies)|"
        r"directives|requirements)\b|\bwhat you (?:were|have been|are) (?:told|asked|instructed)|"
        r"\b(?:claude|agents|gemini)\.md\b|\.cursorrules|\bsystem prompt|\bsafety\b)",
        re.IGNORECASE,
    ),
    GatedPattern(
        (" instruction", " task ", " orders ", " directive"),
        r"\b(?:new|updated|real|actual|true|hidden|secret)\s+(?:instructions?|task|orders|directives?)\b",
        re.IGNORECASE,
    ),
    GatedPattern(
        (
            " you are now ",
            " system prompt",
            " developer mode ",
            " jailbreak",
            " act as ",
            " pretend ",
            " from now on ",
            " henceforth ",
            " going forward ",
        ),
        r"\byou are now\b|\bsystem prompt\b|\bdeveloper mode\b|\bjailbreak|\bact as (?:an?|the)\b|\bpretend (?:to be|you)\b"
        r"|\b(?:from now on|henceforth|going forward)\b[^.]{0,80}\b(?:you|your|ask|asking|confirm|permission|prompts?)\b",
        re.IGNORECASE,
    ),
)
_SPEAKS_TO_THE_READER = (_ADDRESSES_THE_AGENT, *_CLAIMS_AUTHORITY, *_TELLS_TO_RUN, *_SETS_INSTRUCTIONS_ASIDE)


def speaks_to_the_reader(line: str) -> bool:
    """A line a spec must not hand the agent as a rule: it addresses the agent (or any AI, assistant, model), claims
    authority or approval (a system note, a permission granted), tells the reader to run something, or says to
    ignore or override instructions. A rule states what the work must be; these try to steer whoever reads them."""
    words = ascii_words(line)
    return any(part.can_match(words) and part.search(line) for part in _SPEAKS_TO_THE_READER)


_BULLET = LazyPattern(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_JSON_DATA = LazyPattern(r'^(?:[\[{]\s*["{\[]|"[^"\n]{1,80}"\s*:)')  # a JSON value or member: data, not a sentence


# installing a checker, or asking where it is or which version it is, is not running it (`uv pip install pytest ruff
# && uv run ruff check src/` is a lint run; `which ruff uv` and `ruff --version` are none)
_RUNS_NO_CHECKER = LazyPattern(
    r"^\s*(?:sudo\s+)?(?:(?:uv\s+)?pip3?\s+install|uv\s+(?:add|tool\s+install)|pipx\s+install|poetry\s+add|"
    r"(?:npm|pnpm|yarn|bun)\s+(?:install|i|add)|cargo\s+install|gem\s+install|brew\s+install|apt(?:-get)?\s+install|"
    r"which|whereis|type|command\s+-v)\b|\s--version\b"
)
_RUNS_NO_CHECKER_WORDS = (  # a command holding none of these has no such step to leave out
    "install",
    " add ",
    "which ",
    "whereis ",
    "type ",
    "command -v",
    "--version",
)


def check_kind(command: str) -> str | None:
    """test, build or lint when `command` runs one, else None (the first kind that matches, in that order); a step
    that installs packages or only asks where a tool is or which version it is runs none of them."""
    flat = " ".join(command.split())
    if any(word in flat for word in _RUNS_NO_CHECKER_WORDS):
        flat = " && ".join(step for step in re.split(r"\s*(?:&&|\|\||;)\s*", flat) if not _RUNS_NO_CHECKER.search(step))
    return next((kind for kind, pattern in _CHECKS.items() if may_run(flat, kind) and pattern.search(flat)), None)


_COUNTED_FAILURE = LazyPattern(r"\b[1-9]\d* (?:failed|failures?|errors?)\b|\bFAILED\b|^FAIL\b|--- FAIL|FAIL:", re.M)
_COUNTED_PASS = LazyPattern(
    r"\b\d+ pass(?:ed|ing)?\b|\btest result: ok\b|\b0 failures\b|\bAll checks passed\b|\bno issues found\b|^ok\s+\S+",
    re.M,
)


def check_outcome(output: str, is_error: bool) -> str:
    """passed or failed, read from a check's output: a failed run is an error result or reports failures; an error
    it only logged (`Error: …`, a traceback a passing test provoked) does not count when the run ends by counting
    passes and names no failing test or package."""
    tail = output[-20_000:]
    if is_error or _COUNTED_FAILURE.search(tail):
        return "failed"
    if not _FAILED.search(tail):
        return "passed"
    ending = [line for line in tail.splitlines() if line.strip()][-8:]  # a runner's summary, then its timings
    return "passed" if any(_COUNTED_PASS.search(line) for line in ending) else "failed"


_FAILING_TEST = LazyPattern(
    r"^(?:FAILED\s+(?P<pytest>\S+)|--- FAIL: (?P<go>\S+)|\s*(?:✕|×)\s+(?P<jest>.+?)(?:\s+\(\d+ ?m?s\))?$|"
    r"FAIL\s+(?P<file>\S+\.\w+))",
    re.MULTILINE,
)


def failing_tests(output: str, most: int = 3) -> list[str]:
    """The names of the tests a run reports failing (pytest, go test, jest/vitest), the first `most`."""
    names = [next(g for g in m.groups() if g) for m in _FAILING_TEST.finditer(output[-30_000:])]
    return list(dict.fromkeys(n.strip() for n in names))[:most]


def failure_line(output: str) -> str:
    """The line that says how a check failed ("3 failed, 12 passed", "FAIL: …"), else its last line; whole (the
    caller cuts it, after redaction)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    found = next((line for line in reversed(lines) if _FAILED.search(line)), None)
    return found or (lines[-1] if lines else "")


def vcs_action(command: str) -> str | None:
    """commit or push when `command` records work in git (or opens/merges a PR: a push), else None."""
    found = _VCS.search(" ".join(command.split())) if may_run(command, "vcs") else None
    if not found:
        return None
    return "commit" if found.group(1) == "commit" else "push"


def tree_is_clean(output: str) -> bool:
    return _CLEAN_TREE.search(output) is not None


def reads_spec(tool: str, data: dict[str, object], named: set[str] | frozenset[str] = frozenset()) -> str | None:
    """A label for the spec a tool call reads ("Bash: gh issue view 42", "Read: docs/plan.md"), or None. A file
    whose name the person's prompts mention (`named`, casefolded names) is a spec whatever it is called."""
    if tool == "Bash" and isinstance(data.get("command"), str):
        command = str(data["command"])
        found = _SPEC_COMMANDS.search(command) if may_run(command, "spec") else None
        return f"Bash: {_segment(command[found.start() :])}" if found else None
    path = data.get("file_path")
    if tool == "Read" and isinstance(path, str) and path.rsplit("/", 1)[-1].casefold() in named:
        return f"Read: {path} (the file the request names)"
    if tool == "Read" and isinstance(path, str) and _SPEC_FILE.search(path):
        return f"Read: {path}"
    if tool.startswith("mcp__") and _SPEC_TOOL.search(tool.rsplit("__", maxsplit=1)[-1]) and SERVER_NAME not in tool:
        target = next((str(v) for v in data.values() if isinstance(v, (str, int))), "")
        return f"{tool} {target}".strip()[:160]
    return None


def _segment(command: str) -> str:
    """The first command of a command line: up to a pipe, `;`, `&&` or a redirection, at most 80 characters."""
    return " ".join(re.split(r"\s*(?:[;|&]|\d?>)", command.strip(), maxsplit=1)[0].split())[:80]


def is_negated_rule(rule: str) -> bool:
    return _NEGATED_RULE.search(rule) is not None


def _clean_line(line: str) -> str:
    text = _BULLET.sub("", line.replace("\u2192", " ")).strip().strip("`").strip()
    text = re.sub(r"^\d+\s*(?=\S)", "", text) if re.match(r"^\s*\d+\t", line) else text  # cat -n / Read line numbers
    return " ".join(text.split())[:MAX_RULE_CHARS]


def spec_rules(text: str) -> list[str]:
    """The rules a spec states, verbatim, negated ones first, at most MAX_RULES_PER_SPEC."""
    negated: list[str] = []
    others: list[str] = []
    under_rules = False
    heading = ""
    steering: bool | None = False  # None until a rule under `heading` asks whether the heading steers
    for raw in text.splitlines()[:4_000]:
        line = re.sub(r"^\s*\d+→", "", raw)  # Claude Code's Read prefixes every line with its number and an arrow
        if _HEADING.match(line) and not _BULLET.match(line):
            under_rules, heading, steering = bool(_RULE_HEADING.match(line)), line, None
            continue
        if line.lstrip().startswith("|"):
            continue  # a table row: a cell is no rule
        rule = _clean_line(line)
        if len(rule) < 12 or rule.endswith(":") or _JSON_DATA.match(rule):
            continue
        is_negated = _NEGATED_RULE.search(rule) is not None
        if not is_negated and not ((under_rules and _BULLET.match(line)) or _NORMATIVE.search(rule)):
            continue
        if steering is None:
            steering = speaks_to_the_reader(heading)  # "IMPORTANT SYSTEM NOTE:": nothing under it is a rule
        if steering or speaks_to_the_reader(rule):
            continue
        (negated if is_negated else others).append(rule)
    unique = list(dict.fromkeys(negated + others))
    return unique[:MAX_RULES_PER_SPEC]


# what shlex reads otherwise than str.split in ASCII: quotes, escapes, and the whitespace shlex does not split on
_NOT_PLAIN = frozenset("'\"\\\x0b\x0c\x1c\x1d\x1e\x1f")


def _shell_words(command: str) -> list[str]:
    import shlex  # here: most commands have no quotes, and shlex costs a hook process its import

    try:
        return shlex.split(command, posix=True)
    except ValueError:
        return command.split()


def command_head(command: str, words: int = 3) -> str:
    """The first words of the command a command line runs, for labels: variable assignments and a leading `cd …`
    left out ("cd app && FOO=1 mix test test/foo_test.exs" -> "mix test test/foo_test.exs")."""
    parts = command.split() if command.isascii() and _NOT_PLAIN.isdisjoint(command) else _shell_words(command)
    while parts and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", parts[0]) or parts[0] in ("&&", ";")):
        parts = parts[1:]
    if len(parts) > 2 and parts[0] == "cd" and parts[2] in ("&&", ";"):
        return command_head(" ".join(parts[3:]), words) or " ".join(parts[:words])[:80]
    return " ".join(parts[:words])[:80]
