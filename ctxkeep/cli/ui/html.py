"""HTML for the viewer: every stored text is escaped here, links are built from escaped parts, and only http(s)
URLs ever become an outside link (a stored `javascript:` link stays text)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from urllib.parse import urlencode, urlsplit

Html = str  # markup built by these helpers; anything else is text and gets escaped
_REF = re.compile(r"\bev_[0-9a-f]{6,64}\b")  # hex digits survive escaping unchanged


def esc(text: object) -> Html:
    """Text as HTML: <, >, &, quotes escaped (a stored <script> shows as text)."""
    return html.escape(str(text), quote=True)


def href(path: str, **params: object) -> Html:
    """An escaped link to a page of the viewer, its parameters URL-encoded."""
    given = {k: str(v) for k, v in params.items() if v is not None}
    return esc(path + (f"?{urlencode(given)}" if given else ""))


def link(path: str, label: object, **params: object) -> Html:
    return f'<a href="{href(path, **params)}">{esc(label)}</a>'


def outside(text: str) -> Html:
    """A source as shown: a link when it is an http(s) URL, text otherwise (javascript:, data:, file: stay text)."""
    parts = urlsplit(text.strip())
    if parts.scheme in ("http", "https") and parts.netloc and not any(c in text for c in "\r\n\t "):
        return f'<a href="{esc(text.strip())}" rel="noreferrer noopener" class="outside">{esc(text)}</a>'
    return esc(text)


def table(columns: Sequence[str], rows: Iterable[Sequence[Html]], cls: str = "") -> Html:
    """A table of cells already made HTML (escape text cells with `esc`), in a box that scrolls sideways rather than
    letting the page grow (cells break between words only; identifiers never)."""
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return (
        f'<div class="table-box"><table class="{esc(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
        "</table></div>"
    )


def ident(text: object) -> Html:
    """An identifier (a task or session id, a key, a hash) that never breaks across lines."""
    return f'<code class="ident">{esc(text)}</code>'


def when(text: object, seconds: bool = False) -> Html:
    """A stored time as `YYYY-MM-DD HH:MM[:SS]` that never breaks across lines."""
    return f'<span class="when">{esc(str(text).replace("T", " ")[: 19 if seconds else 16])}</span>'


def ref_link(ref: str) -> Html:
    """An evidence ref as a link to its record, never broken across lines."""
    return f'<a class="ref" href="{href("/evidence/item", ref=ref)}">{esc(ref)}</a>'


def bar(label: str, tokens: int, whole: int, note: str = "") -> Html:
    """One slot's share of a budget as a bar: the share is in the width, the numbers beside it."""
    share = 0.0 if whole <= 0 else min(1.0, tokens / whole)
    return (
        f'<div class="slot" data-slot="{esc(label)}" data-tokens="{tokens}"><span class="slot-name" title="{esc(label)}">'
        f"{esc(label)}</span>"
        f'<span class="track"><span class="fill w{round(share * 100)}"></span></span>'
        f'<span class="slot-numbers">{tokens:,} tokens, {share * 100:.1f}%{esc(note)}</span></div>'
    )


def section(title: str, body: Html, cls: str = "", anchor: str = "") -> Html:
    ident = f' id="{esc(anchor)}"' if anchor else ""
    return f'<section class="{esc(cls)}"{ident}><h2>{esc(title)}</h2>{body}</section>'


def pre(text: str, cls: str = "stored") -> Html:
    return f'<pre class="{esc(cls)}">{esc(text)}</pre>'


def pre_with_refs(text: str, cls: str = "stored") -> Html:
    """Stored text as `pre`, each evidence ref in it a link to its record that never breaks across lines."""
    return f'<pre class="{esc(cls)}">{_REF.sub(lambda m: ref_link(m.group(0)), esc(text))}</pre>'


def page(title: str, body: Html, project: str, database: str) -> Html:
    """A whole page: the navigation, the title, the body."""
    nav = " ".join(
        link(path, label)
        for path, label in (
            ("/", "Overview"),
            ("/injections", "Injections"),
            ("/evidence", "Evidence"),
            ("/memories", "Memories"),
        )
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
        'content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">'
        f'<title>{esc(title)} · ctxkeep</title><link rel="stylesheet" href="/static/style.css"></head><body>'
        f'<header><span class="brand">ctxkeep</span><nav>{nav}</nav><span class="where">project {esc(project)} · '
        f"database {esc(database)} · read-only</span></header><main><h1>{esc(title)}</h1>{body}</main></body></html>"
    )
