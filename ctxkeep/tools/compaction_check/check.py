"""Does a summary carry what the records say must survive? One checker for every summary ctxkeep reads.

compress_history's `summary` (the agent was asked to quote: `exact=True`), a client's own compaction summary and
the SessionStart/PostCompact repair (a model paraphrased: `exact=False`) all run through `check_summary`. Items are
plain data, so the hooks use it without pydantic:

- a goal, constraint, rule or request is carried when one passage of the summary (a line or sentence and its
  neighbour) holds its distinctive words — every identifier and number, most other words — or, exact, its text;
  a negated one also needs a negation there, else `summary_negation_lost`;
- a pending item must be mentioned and not written as done (`summary_pending_missing`);
- a completed item must be mentioned (`summary_completed_missing`): a side effect left unsaid may be done again;
- an open approval must be mentioned and not written as decided (`summary_approval_missing`);
- a critical fact's exact value must appear (`summary_fact_missing`);
- a state item (uncommitted work, a failing or unrun check, an open error or side effect) must be stated
  (`summary_state_missing`);
- a summary that claims everything is done while pending items, failing checks or unverified edits remain gets
  `summary_claim_unverified`.
Standard library only: the per-event hooks import it.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence

from ctxkeep.text import LazyPattern, match_key, one_line
from ctxkeep.tools.shared.negation import has_negation, negated_clauses

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from ctxkeep.named_tuple import NamedTuple

WORDS_CARRIED = 0.6  # share of an item's plain words one passage must hold (identifiers and numbers: all of them)
_TOKEN = LazyPattern(r"[\w][\w./#:@+-]*[\w]|\w")
_IDENTIFIER = LazyPattern(r"\d|[._/#:@]|[a-z][A-Z]|^[A-Z]{2,}")
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "but",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "then",
        "than",
        "so",
        "such",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "after",
        "before",
        "when",
        "while",
        "which",
        "who",
        "whom",
        "what",
        "where",
        "why",
        "how",
        "all",
        "any",
        "each",
        "every",
        "some",
        "more",
        "most",
        "other",
        "only",
        "own",
        "same",
        "too",
        "very",
        "can",
        "will",
        "just",
        "should",
        "would",
        "could",
        "may",
        "might",
        "must",
        "do",
        "does",
        "did",
        "done",
        "has",
        "have",
        "had",
        "having",
        "not",
        "no",
        "nor",
        "never",
        "dont",
        "don't",
        "also",
        "yet",
        "still",
        "please",
        "let",
        "us",
        "we",
        "you",
        "your",
        "i",
        "me",
        "my",
        "our",
        "they",
        "them",
        "their",
        "he",
        "she",
        "his",
        "her",
        "if",
        "else",
        "use",
        "using",
        "used",
        "make",
        "made",
        "keep",
        "get",
        "got",
        "new",
        "now",
    ]
)
_DONE = LazyPattern(
    r"\b(?:done|completed?|finished|resolved|fixed|closed|shipped|implemented|merged|passed)\b|已完成|完成了|已解决",
    re.I,
)
_OPEN = LazyPattern(
    r"\b(?:pending|todo|to do|open|missing|waiting|blocked|not yet|remaining|outstanding|in progress|"
    r"still|next|needs?|unfinished|incomplete|not (?:yet )?(?:done|complete|completed|finished|run))\b|待|未|缺",
    re.I,
)
_DECIDED = LazyPattern(r"\b(?:approved|granted|rejected|declined|signed off)\b|已批准|批准了|已拒绝", re.I)
_ALL_DONE = LazyPattern(
    r"\b(?:all (?:tasks?|todos?|items?|work|steps|changes|issues?)(?: \w+)? (?:are |is |have been |has been )?(?:now )?"
    r"(?:done|complete|completed|finished|resolved)|everything (?:is |has been )?(?:now )?(?:done|complete|working|fixed|"
    r"resolved|in place)|no (?:remaining|pending|outstanding|open) (?:tasks?|work|items?|issues?|todos?)|"
    r"all (?:the )?tests (?:now )?pass(?:ed|ing)?|(?:fully|completely) (?:implemented|done|working|fixed|resolved)|"
    r"(?:is|are) (?:now )?(?:complete and )?working correctly|task (?:is )?(?:now )?complete)\b",
    re.I,
)
_PASSAGE_BREAK = LazyPattern(r"\n+|(?<=[.!?;。；])\s+")


class Item(NamedTuple):
    """One thing a summary must carry. `kind`: goal | constraint | rule | request | env | lesson (a failure got past)
    | decision | pending | approval | fact | state.
    `value`: a fact's exact value in comparison form (`ctxkeep.text.value_key`), an approval's id, or for a state the
    pattern (a regex) a summary that says it matches; `source`: where the item comes from, shown in repairs."""

    kind: str
    text: str
    value: str | None = None
    source: str | None = None
    ref: str | None = None


class Finding(NamedTuple):
    rule: str
    item: Item
    detail: str


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


Terms = tuple[frozenset[str], frozenset[str]]  # (identifiers and numbers, other content words)


@functools.lru_cache(maxsize=4096)
def _terms(text: str) -> Terms:
    """(identifiers and numbers, other content words) of a text, in comparison form (each passage is read once)."""
    ids: set[str] = set()
    words: set[str] = set()
    identifier = _IDENTIFIER.compiled.search
    for token in _TOKEN.findall(text):
        if len(token) < 2:
            continue
        if identifier(token):
            ids.add(token.casefold().strip("./:#"))
        elif len(token) > 2 and (folded := token.casefold()) not in _STOP:
            words.add(_stem(folded))
    return frozenset(ids), frozenset(words)


def _parts(summary: str) -> list[str]:
    return [p for p in _PASSAGE_BREAK.split(summary) if p.strip()]


def passages(summary: str) -> list[str]:
    """The summary's lines and sentences, each joined with the next (an item often spans a bullet and its detail)."""
    parts = _parts(summary)
    return [" ".join(parts[i : i + 2]) for i in range(len(parts))] or [summary]


class Passages:
    """Passages indexed by their terms: which passages hold each identifier and each other word, built once, on first
    use. An item then looks up its candidate passages instead of reading every passage (a compaction summary has
    hundreds)."""

    def __init__(self, texts: Sequence[str], terms: Sequence[Terms] | None = None) -> None:
        self.texts = list(texts)
        self._terms = terms
        self._ids: dict[str, list[int]] | None = None
        self._words: dict[str, list[int]] = {}
        self._holding: dict[str, frozenset[int]] = {}

    @classmethod
    def of_summary(cls, summary: str) -> Passages:
        """The passages of `summary` (`passages`); each line or sentence is read once, though it is in two passages
        (no term spans the space that joins them)."""
        parts = _parts(summary)
        if not parts:
            return cls([summary])
        read = [_terms(part) for part in parts]
        joined = [(a[0] | b[0], a[1] | b[1]) for a, b in zip(read, read[1:], strict=False)] + [read[-1]]
        return cls([" ".join(parts[i : i + 2]) for i in range(len(parts))], joined)

    def _index(self) -> dict[str, list[int]]:
        if self._ids is None:
            self._ids = {}
            for n, text in enumerate(self.texts):
                ids, words = self._terms[n] if self._terms is not None else _terms(text)
                for term in ids:
                    self._ids.setdefault(term, []).append(n)
                for term in words:
                    self._words.setdefault(term, []).append(n)
        return self._ids

    def _holding_id(self, term: str) -> frozenset[int]:
        """The passages with an identifier that holds `term` (itself, or one it is part of: `a.py` in `src/a.py`)."""
        found = self._holding.get(term)
        if found is None:
            found = frozenset(n for other, at in self._index().items() if term in other for n in at)
            self._holding[term] = found
        return found

    def carrying(self, text: str) -> str | None:
        """The first passage that holds every identifier of `text` and most of its other words; None when none does."""
        ids, words = _terms(text)
        if not ids and not words:
            return None
        need = max(min(len(words), 3), math.ceil(len(words) * WORDS_CARRIED))
        self._index()
        candidates: set[int] | None = None
        for term in ids:
            holding = self._holding_id(term)
            candidates = set(holding) if candidates is None else candidates & holding
            if not candidates:
                return None
        counts: dict[int, int] = {}
        for term in words:
            for n in self._words.get(term, ()):
                counts[n] = counts.get(n, 0) + 1
        if candidates is None:  # no identifiers: a passage must hold `need` (at least one) of the words
            candidates = {n for n, count in counts.items() if count >= need}
        carrying = [n for n in candidates if counts.get(n, 0) >= need]
        return self.texts[min(carrying)] if carrying else None


def carrying_passage(text: str, summary_passages: Passages | Sequence[str]) -> str | None:
    """The first passage that holds every identifier of `text` and most of its other words; None when none does."""
    index = summary_passages if isinstance(summary_passages, Passages) else Passages(summary_passages)
    return index.carrying(text)


def _negated(text: str) -> bool:
    return bool(negated_clauses(text)) or has_negation(text)


def _check_rule(item: Item, summary: str, found: Passages, exact: bool) -> Finding | None:
    if exact:
        kept = set(negated_clauses(summary))
        lost = [c for c in negated_clauses(item.text) if c not in kept]
        if lost:
            return Finding(
                "summary_negation_lost",
                item,
                f"the summary does not keep {', '.join(map(repr, lost))} under a negation; quote the constraint",
            )
        return None
    passage = carrying_passage(item.text, found)
    if passage is None:
        return Finding(
            "summary_negation_lost" if _negated(item.text) else "summary_constraint_missing",
            item,
            "the summary leaves this rule out",
        )
    if _negated(item.text) and not has_negation(passage):
        return Finding(
            "summary_negation_lost", item, f"the summary keeps the words but not the negation ({passage[:120]!r})"
        )
    return None


def _check_pending(item: Item, summary: str, found: Passages, exact: bool) -> Finding | None:
    mentions, needle = _mentions(item, summary, found, exact)
    if not mentions:
        return Finding("summary_pending_missing", item, "the pending item is not mentioned; list it as pending")
    rest = [m.replace(needle, " ") if needle else m for m in mentions]
    if all(_DONE.search(m) and not _OPEN.search(m) for m in rest):
        return Finding(
            "summary_pending_missing",
            item,
            f"the pending item is written as done ({mentions[0].strip()[:120]!r}); it is still pending",
        )
    return None


def _value_in(value: str, text: str) -> bool:
    """`value` appears as a whole number or id (0.48 is not in 0.484, 10.48 or A-0.48; "250ms" holds 250)."""
    return re.search(rf"(?<![\w.\-]){re.escape(value)}(?!\d|\.\d)", text) is not None


_CLAUSE_BREAK = LazyPattern(r"\n|[;；。，,]|(?<!\w)\.|\.(?!\w)|\s(?:and|but)\s")


def _mentions(item: Item, summary: str, found: Passages, exact: bool) -> tuple[list[str], str]:
    """The parts of the summary naming the item (exact: the clauses holding its text or id verbatim) and the needle
    to blank out of them before reading what they say about it."""
    if exact:
        needles = [match_key(n) for n in (item.text, item.value) if n]
        clauses = _CLAUSE_BREAK.split(match_key(summary))
        for needle in needles:
            hits = [c for c in clauses if needle in c]
            if hits:
                return hits, needle
        return [], ""
    passage = carrying_passage(item.text, found) or next(
        (p for p in found.texts if item.value and item.value in p), None
    )
    return ([passage], match_key(item.text)) if passage else ([], "")


def _check_approval(item: Item, summary: str, found: Passages, exact: bool) -> Finding | None:
    mentions, needle = _mentions(item, summary, found, exact)
    if not mentions:
        return Finding(
            "summary_approval_missing",
            item,
            f"the open approval ({item.text}) is not mentioned; say it is still waiting",
        )
    rest = [m.replace(needle, " ") if needle else m for m in mentions]
    if all(_DECIDED.search(m) and not _OPEN.search(m) for m in rest):
        return Finding(
            "summary_approval_missing",
            item,
            f"the open approval is written as decided ({mentions[0].strip()[:120]!r}); it is still waiting",
        )
    return None


def _carried(item: Item, summary: str, found: Passages, exact: bool) -> bool:
    return match_key(item.text) in match_key(summary) if exact else carrying_passage(item.text, found) is not None


def _check_goal(item: Item, summary: str, found: Passages, exact: bool) -> Finding | None:
    carried = _carried(item, summary, found, exact)
    return None if carried else Finding("summary_goal_missing", item, "the summary does not state the goal; quote it")


def _check_completed(item: Item, summary: str, found: Passages, exact: bool) -> Finding | None:
    carried = _carried(item, summary, found, exact)
    return (
        None
        if carried
        else Finding(
            "summary_completed_missing",
            item,
            "the completed item is not mentioned; say it is done, so it is not done again",
        )
    )


def _states(item: Item, summary: str, found: Passages) -> bool:
    """A state item is said when the summary matches its pattern (`value`, a regex), else carries its words."""
    if item.value:
        return re.search(item.value, summary, re.IGNORECASE) is not None
    return carrying_passage(item.text, found) is not None


def check_summary(items: list[Item], summary: str, exact: bool = False) -> list[Finding]:
    """What `summary` loses of `items`, in item order, then an unverified "all done" claim."""
    found = Passages.of_summary(summary)
    out: list[Finding] = []
    for item in items:
        finding: Finding | None = None
        if item.kind == "goal":
            finding = _check_goal(item, summary, found, exact)
        elif item.kind in ("constraint", "rule", "request", "env", "lesson", "decision"):
            finding = _check_rule(item, summary, found, exact)
        elif item.kind == "pending":
            finding = _check_pending(item, summary, found, exact)
        elif item.kind == "completed":
            finding = _check_completed(item, summary, found, exact)
        elif item.kind == "approval":
            finding = _check_approval(item, summary, found, exact)
        elif item.kind == "fact" and item.value is not None and not _value_in(item.value, match_key(summary)):
            finding = Finding(
                "summary_fact_missing", item, f"the exact value {item.value} is not in the summary; copy it verbatim"
            )
        elif item.kind == "state" and not _states(item, summary, found):
            finding = Finding("summary_state_missing", item, "the summary does not say this")
        if finding:
            out.append(finding)
    claim = _ALL_DONE.search(summary)
    unfinished = [i for i in items if i.kind in ("pending", "state")]
    if claim and unfinished:
        out.append(
            Finding(
                "summary_claim_unverified",
                Item("claim", claim.group(0)),
                f"the summary says {claim.group(0)!r}, but {len(unfinished)} item(s) are still open or unverified, "
                + "among them: "
                + "; ".join(one_line(i.text, 80) for i in unfinished[:3]),
            )
        )
    return out
