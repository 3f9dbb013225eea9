"""The viewer's record pages: evidence (search, one record with its source), the memories with their provenance, and
the sign-in page."""

from __future__ import annotations

from ctxkeep.cli.memory_commands import provenance
from ctxkeep.cli.ui.html import Html, esc, href, ident, link, outside, pre, ref_link, section, table
from ctxkeep.models.evidence import EvidenceContent, EvidenceSearchResult
from ctxkeep.models.memory import Memory


def search_form(query: str) -> Html:
    return (
        '<form class="inline" action="/evidence" method="get" role="search"><input type="search" name="q" '
        f'value="{esc(query)}" placeholder="words to look for" aria-label="search the evidence"><button>Search</button></form>'
    )


def evidence_page(query: str, result: EvidenceSearchResult | None) -> Html:
    if result is None:
        return (
            search_form(query)
            + '<p class="muted">Search this project\'s evidence: tool outputs, files and documents kept out of the context.</p>'
        )
    if not result.hits:
        return search_form(query) + f'<p class="muted" id="no-hits">No evidence matches <q>{esc(query)}</q>.</p>'
    rows = [
        (
            esc(h.rank),
            ref_link(h.ref),
            f"{h.score:.2f}",
            ident(h.kind),
            outside(h.source) if h.source else '<span class="muted">none</span>',
            esc(h.title or ""),
            f'<a class="ident" href="{href("/task", id=h.task_id)}">{esc(h.task_id)}</a>' if h.task_id else "",
            f'<span class="hit-snippet">{esc(h.snippet)}</span>',
        )
        for h in result.hits
    ]
    more = '<p class="muted">More hits matched than fit; narrow the query.</p>' if result.truncated else ""
    return (
        search_form(query)
        + table(["#", "ref", "score", "kind", "source", "title", "task", "snippet"], rows, "hits")
        + more
    )


def evidence_item_page(item: EvidenceContent, task_id: str | None, created_at: str, redactions: int) -> Html:
    facts = table(
        ["ref", "kind", "source", "title", "task", "stored", "size", "secrets redacted"],
        [
            (
                ident(item.ref),
                ident(item.kind),
                outside(item.source) if item.source else '<span class="muted">none</span>',
                esc(item.title or ""),
                link("/task", task_id, id=task_id) if task_id else "",
                esc(created_at.replace("T", " ")[:19]),
                f"{item.total_tokens:,} tokens, {item.total_lines:,} lines",
                esc(redactions),
            )
        ],
        "record",
    )
    cut = (
        (
            f'<p class="muted">Shown: the first {item.returned_tokens:,} tokens; `ctxkeep evidence get {esc(item.ref)} --mode lines '
            "--start N` prints any part.</p>"
        )
        if item.truncated
        else ""
    )
    return facts + section("Content, as stored (secrets redacted)", pre(item.content) + cut)


def _memory_source(memory: Memory) -> Html:
    text = esc(provenance(memory))
    if memory.source.evidence_ref:
        text += " · " + link("/evidence/item", "the receipt", ref=memory.source.evidence_ref)
    if memory.source.task_id:
        text += " · " + link("/task", "the task", id=memory.source.task_id)
    return text


def memories_page(memories: list[Memory], history: bool, not_shown: int) -> Html:
    toggle = link("/memories", "only those in force") if history else link("/memories", "with history", history=1)
    if not memories:
        return f'<p>{toggle}</p><p class="muted">No memories in this project yet.</p>'
    rows = []
    for m in memories:
        dates = (
            f"written {m.created_at:%Y-%m-%d}"
            + (f", effective {m.effective_at:%Y-%m-%d}" if m.effective_at else "")
            + (f", expires {m.expires_at:%Y-%m-%d}" if m.expires_at else ", no expiry")
        )
        status = f'<span class="tag {"pending" if m.status != "current" else ""}">{esc(m.status)}</span>'
        rows.append(
            (
                f'<code class="ident" id="{esc(m.memory_id)}">{esc(m.memory_id)}</code>',
                ident(m.kind),
                esc(m.key),
                status,
                esc(m.content),
                _memory_source(m),
                esc(dates),
            )
        )
    hidden = f'<p class="muted">{not_shown} older version(s) not shown.</p>' if not_shown else ""
    return (
        f"<p>{toggle}</p>"
        + table(["id", "kind", "key", "status", "content", "provenance", "dates"], rows, "memories")
        + hidden
    )


def login_page(token_file: str, failed: bool, next_path: str) -> Html:
    wrong = '<p class="bad">That is not the token.</p>' if failed else ""
    return (
        f"{wrong}<p>This viewer shows what ctxkeep holds for this project; only the person who can read the token "
        f"file gets in. Paste the token from <code>{esc(token_file)}</code> (or open the sign-in file `ctxkeep ui` "
        'named when it started).</p><form class="inline" action="/login" method="post">'
        f'<input type="hidden" name="next" value="{esc(next_path)}">'
        '<input type="password" name="token" autocomplete="off" aria-label="token"><button>Sign in</button></form>'
    )
