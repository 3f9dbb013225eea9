"""Output of the command line: rich tables and colour when a terminal is attached, plain text otherwise, JSON on request.

Stored text (evidence, memories, briefs) can hold terminal escape sequences (an OSC 52 clipboard write, a window
title); written to a terminal, every control character but newline and tab is shown as a visible escape instead.
Piped output is written as stored, byte for byte.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from ctxkeep.storage import Store

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def is_terminal() -> bool:
    return sys.stdout.isatty()


def safe(text: str) -> str:
    """`text` for a terminal: control characters (escape sequences, carriage returns) as visible `\\xNN` escapes."""
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text) if is_terminal() else text


def print_text(text: str) -> None:
    """Stored text as it is, with a terminal's control characters made visible."""
    print(safe(text), end="" if text.endswith("\n") else "\n")


def print_json(data: BaseModel | Any) -> None:
    """Stable JSON (sorted keys) for scripts."""
    value = data.model_dump(mode="json") if isinstance(data, BaseModel) else data
    print(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A table: rich in a terminal, otherwise columns padded with spaces (one row per line, no truncation)."""
    cells = [[safe(str(cell)) for cell in row] for row in rows]
    if is_terminal():
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title, title_justify="left")
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in cells:
            table.add_row(*row)
        Console().print(table)
        return
    widths = [max([len(column)] + [len(row[i]) for row in cells]) for i, column in enumerate(columns)]
    print(title)
    print("  ".join(column.ljust(width) for column, width in zip(columns, widths, strict=True)).rstrip())
    for row in cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def print_markdown(text: str) -> None:
    """Markdown (briefs, handoffs, working sets): rendered in a terminal, as is otherwise."""
    if is_terminal():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(safe(text)))
        return
    print(text, end="" if text.endswith("\n") else "\n")


def say_if_created(store: Store) -> None:
    """One line on stderr when opening the database made its file: where a new database is."""
    if store.created:
        print(f"ctxkeep: created a new database at {store.location}", file=sys.stderr)
