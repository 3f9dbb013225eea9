"""What the conversation itself settles: the next steps the agent says remain, the decisions it states, and what it
found out (a root cause, a limitation).

Both are the agent's (or the person's) own words, kept verbatim and shown quoted under who said them: a decision is a
sentence that chooses ("decided to …", "… instead of …", "going with …"); next steps are the items listed under a
heading such as "Next steps", "Remaining" or "Still to do". Standard library only (per-event hooks).
"""

from __future__ import annotations

import re

from ctxkeep.text import LazyPattern, one_line

MAX_STEPS = 10
MAX_DECISIONS = 3
_STEPS_HEADING = LazyPattern(
    r"^\s*(?:#{1,4}\s*)?(?:\*\*)?(?:\d+\.\s*)?(?:next steps?|remaining(?: work| tasks| steps| items)?|still (?:to do|todo|"
    r"pending|left)|left to do|what(?:'s| is) left|what remains|follow[- ]ups?|outstanding(?: work| items)?|open items|"
    r"not (?:yet )?done|to ?do(?: next)?)\b[^\n]{0,40}?:?\s*(?:\*\*)?:?\s*$",
    re.I,
)
_ITEM = LazyPattern(r"^\s*(?:[-*+•]|\d+[.)]|- \[ \])\s+(?P<text>\S.*)$")
_HEADING = LazyPattern(r"^\s*(?:#{1,4}\s+\S|\*\*[^*]+\*\*:?\s*$)")
_DECISION = LazyPattern(
    r"\b(?:decided|decision(?: is)?:|opted|settled on)\b|\b(?:I|we)(?:'ll| will| chose| picked| went with)\b[^.]{0,80}"
    r"\b(?:instead of|rather than|over|go with|stick with|switch to|keep)\b|\blet'?s (?:go with|use|keep|stick with|"
    r"switch to)\b|\bgoing with\b|决定|改用",
    re.I,
)
_FINDING = LazyPattern(
    r"\b(?:root cause|the (?:real |actual )?(?:cause|culprit|reason|problem|issue|bug) (?:is|was)|turns out|"
    r"it was (?:caused|because)|(?:known )?limitation|pre-?existing|not (?:introduced|caused) by|unrelated to|"
    r"false positive|must stay|still used by|is used by|confirmed that|verified that)\b",
    re.I,
)
MAX_FINDINGS = 3
_SENTENCE = LazyPattern(r"(?<=[.!?。！？])\s+|\n+")


def next_steps(text: str) -> list[str]:
    """The items listed under the message's last "next steps"-like heading, verbatim (at most MAX_STEPS)."""
    lines = text.splitlines()
    start = max((n for n, line in enumerate(lines) if _STEPS_HEADING.match(line)), default=None)
    if start is None:
        return []
    steps: list[str] = []
    for line in lines[start + 1 :]:
        item = _ITEM.match(line)
        if item:
            steps.append(one_line(item.group("text").strip("*` "), 300))
        elif not line.strip() and not steps:
            continue
        elif not line.strip() or _HEADING.match(line) or not line.startswith((" ", "\t")):
            break
        if len(steps) >= MAX_STEPS:
            break
    return [s for s in steps if len(s) >= 8]


def findings(text: str) -> list[str]:
    """The sentences of `text` that state what the work found out (a root cause, a limitation, what something is
    still used by), verbatim (at most MAX_FINDINGS)."""
    found = [one_line(s, 300) for s in _SENTENCE.split(text) if 30 <= len(s.strip()) <= 400 and _FINDING.search(s)]
    return [s for s in found if not s.endswith("?")][:MAX_FINDINGS]


def decisions(text: str) -> list[str]:
    """The sentences of `text` that state a choice, verbatim (at most MAX_DECISIONS)."""
    found = [one_line(s, 300) for s in _SENTENCE.split(text) if 20 <= len(s.strip()) <= 400 and _DECISION.search(s)]
    return [s for s in found if not s.endswith("?")][:MAX_DECISIONS]
