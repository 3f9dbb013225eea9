"""Token counting works offline with the shipped cl100k_base file."""

from __future__ import annotations

import subprocess
import sys

from ctxkeep import tokens


def test_the_offline_encoding_loads_and_counts() -> None:
    assert tokens.encoding_name() == tokens.ENCODING
    assert tokens.count_tokens("hello world") == 2
    assert tokens.count_tokens("") == 0


def test_special_token_text_counts_as_ordinary_text() -> None:
    assert tokens.count_tokens("<|endoftext|>") > 1


def test_chinese_text_is_counted() -> None:
    assert 2 <= tokens.count_tokens("比较供应商报价") <= 14


def test_without_tiktoken_counts_fall_back_to_an_estimate_and_say_so_once() -> None:
    script = (
        "import sys; sys.modules['tiktoken'] = None\n"  # tiktoken cannot be imported in this process
        "from ctxkeep import tokens\n"
        "print(tokens.count_tokens('abcdefgh'), tokens.count_tokens('abcd'), tokens.encoding_name())\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", "1", "estimate", "(utf-8", "bytes", "/", "4)"]
    assert result.stderr.count("token counts are estimates") == 1
