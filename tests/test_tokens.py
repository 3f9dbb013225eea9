"""Token counting works offline with the shipped cl100k_base file."""

from __future__ import annotations

from ctxkeep import tokens


def test_the_offline_encoding_loads_and_counts() -> None:
    assert tokens.encoding_name() == tokens.ENCODING
    assert tokens.count_tokens("hello world") == 2
    assert tokens.count_tokens("") == 0


def test_special_token_text_counts_as_ordinary_text() -> None:
    assert tokens.count_tokens("<|endoftext|>") > 1


def test_chinese_text_is_counted() -> None:
    assert 2 <= tokens.count_tokens("比较供应商报价") <= 14
