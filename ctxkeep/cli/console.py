"""Output of the command line: rich tables and colour when a terminal is attached, plain text otherwise, JSON on request."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel


def is_terminal() -> bool:
    return sys.stdout.isatty()


def print_json(data: BaseModel | Any) -> None:
    """Stable JSON (sorted keys) for scripts."""
    value = data.model_dump(mode="json") if isinstance(data, BaseModel) else data
    print(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False))


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A table: rich in a terminal, otherwise columns padded with spaces (one row per line, no truncation)."""
    cells = [[str(cell) for cell in row] for row in rows]
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
    print("  ".join(column.ljust(width) for column, width in zip(columns, widths)).rstrip())
    for row in cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def print_markdown(text: str) -> None:
    """Markdown (briefs, handoffs, working sets): rendered in a terminal, as is otherwise."""
    if is_terminal():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
        return
    print(text, end="" if text.endswith("\n") else "\n")
