"""The evidence store through the in-memory MCP client: round trips, dedupe, every get mode, search, isolation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ctxkeep.server import build_server
from ctxkeep.settings import Settings
from tests.conftest import tool_text
from tests.db_dump import query

pytestmark = pytest.mark.anyio


async def put(client: Client, content: str, **fields: Any) -> dict[str, Any]:
    result = await client.call_tool("evidence_put", {"content": content, **fields})
    assert not result.is_error, tool_text(result)
    return result.structured_content


async def get(client: Client, ref: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("evidence_get", {"format": "json", "ref": ref, **arguments})
    assert not result.is_error, tool_text(result)
    return result.structured_content


async def read_all_chunks(client: Client, ref: str) -> str:
    parts, arguments = [], {"mode": "chunk", "chunk": 0, "max_tokens": 25_000}
    while True:
        part = await get(client, ref, **arguments)
        parts.append(part["content"])
        if part["next"] is None:
            return "".join(parts)
        arguments = {**part["next"], "max_tokens": 25_000}
        arguments.pop("ref")


ROUND_TRIPS = {
    "ascii": "plain ASCII text\nwith two lines",
    "chinese": "供应商C的运费是每件0.48美元。\n数据完整之前不能推荐。",
    "emoji": "build passed ✅ 🎉 👩‍💻 — naïve café",
    "crlf": "line one\r\nline two\r\n\r\nline four\r\n",
    "long_line": "x" * 199_990 + "end-0123",
    "empty": "",
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIPS))
async def test_content_comes_back_byte_identical(client: Client, name: str) -> None:
    content = ROUND_TRIPS[name]
    stored = await put(client, content, kind="file", source=f"{name}.txt")
    assert await read_all_chunks(client, stored["ref"]) == content
    full = await get(client, stored["ref"], max_tokens=25_000)
    if not full["truncated"]:
        assert full["content"] == content
    assert stored["bytes"] == len(content.encode("utf-8"))


async def test_ten_megabytes_reassemble_from_chunks(client: Client) -> None:
    line = "2026-11-30T10:00:00Z INFO worker-7 processed order 184300 for supplier C (freight 0.48 USD/piece)\n"
    content = line * (10_000_000 // len(line))
    stored = await put(client, content, kind="file", source="big.log")
    assert stored["lines"] == content.count("\n")
    assert await read_all_chunks(client, stored["ref"]) == content


async def test_the_same_record_is_stored_once_and_the_same_content_shares_a_blob(client: Client, db_path: Path) -> None:
    first = await put(client, "identical output", source="Bash")
    again = await put(client, "identical output", source="Bash")
    other = await put(client, "identical output", source="Bash", title="a second record")
    assert again["ref"] == first["ref"] and again["deduplicated"] is True and first["deduplicated"] is False
    assert other["ref"] != first["ref"] and other["deduplicated"] is False
    assert query(db_path, "SELECT count(*) FROM blobs") == [(1,)]
    assert query(db_path, "SELECT count(*) FROM evidence") == [(2,)]


async def test_a_batch_returns_refs_in_input_order(client: Client) -> None:
    items = [{"content": f"output {i}", "source": "Bash"} for i in range(5)] + [
        {"content": "output 2", "source": "Bash"}
    ]
    result = await client.call_tool("evidence_put", {"items": items})
    data = result.structured_content
    assert len(data["refs"]) == 6 and data["refs"][5] == data["refs"][2]
    assert [i["deduplicated"] for i in data["items"]] == [False] * 5 + [True]
    for ref, i in zip(data["refs"], [0, 1, 2, 3, 4, 2], strict=True):
        assert (await get(client, ref))["content"] == f"output {i}"


LINES = "".join(f"line {i}: {'ERROR (code 7) a.b' if i % 10 == 0 else 'ok'}\n" for i in range(1, 101))


async def test_head_tail_and_lines(client: Client) -> None:
    ref = (await put(client, LINES, kind="file"))["ref"]
    head = await get(client, ref, mode="head", n=3)
    assert head["content"] == "line 1: ok\nline 2: ok\nline 3: ok\n" and head["next"] == {
        "ref": ref,
        "mode": "lines",
        "start": 4,
    }
    tail = await get(client, ref, mode="tail", n=2)
    assert tail["content"] == "line 99: ok\nline 100: ERROR (code 7) a.b\n"
    assert tail["next"] == {"ref": ref, "mode": "lines", "start": 1, "end": 98}
    window = await get(client, ref, mode="lines", start=10, end=11)
    assert window["content"] == "line 10: ERROR (code 7) a.b\nline 11: ok\n"
    assert (await get(client, ref, mode="head", n=1000))["content"] == LINES


async def test_ranges_past_the_end_and_empty_ranges(client: Client) -> None:
    ref = (await put(client, LINES, kind="file"))["ref"]
    clipped = await get(client, ref, mode="lines", start=99, end=500)
    assert clipped["content"] == "line 99: ok\nline 100: ERROR (code 7) a.b\n" and clipped["next"] is None
    beyond = await get(client, ref, mode="lines", start=500, end=600)
    assert beyond["content"] == "" and beyond["next"] is None and beyond["total_lines"] == 100
    single = await get(client, ref, mode="lines", start=5, end=5)
    assert single["content"] == "line 5: ok\n"
    reversed_range = await client.call_tool(
        "evidence_get", {"format": "json", "ref": ref, "mode": "lines", "start": 9, "end": 3}
    )
    assert reversed_range.is_error and "end (3) is before start (9)" in tool_text(reversed_range)


async def test_grep_with_context_and_metacharacters(client: Client) -> None:
    ref = (await put(client, LINES, kind="file"))["ref"]
    found = await get(client, ref, mode="grep", pattern=r"\(code 7\) a\.b", context=1, end=25)
    assert found["content"] == (
        "9-line 9: ok\n10:line 10: ERROR (code 7) a.b\n11-line 11: ok\n--\n"
        "19-line 19: ok\n20:line 20: ERROR (code 7) a.b\n21-line 21: ok\n"
    )
    literal_dot = await get(client, ref, mode="grep", pattern="a.b", context=0)
    assert [line.split(":")[0] for line in literal_dot["content"].splitlines() if line != "--"] == [
        str(i) for i in range(10, 101, 10)
    ]
    nothing = await get(client, ref, mode="grep", pattern="no such text")
    assert nothing["content"] == "" and nothing["next"] is None
    bad = await client.call_tool("evidence_get", {"format": "json", "ref": ref, "mode": "grep", "pattern": "(unclosed"})
    assert bad.is_error and "not a valid regular expression" in tool_text(bad)


async def test_a_small_budget_truncates_and_next_gets_the_rest(client: Client) -> None:
    content = "".join(f"row {i} " + "word " * 40 + "\n" for i in range(200))
    ref = (await put(client, content, kind="file"))["ref"]
    collected, arguments = "", {"mode": "full", "max_tokens": 500}
    while True:
        part = await get(client, ref, **arguments)
        assert part["returned_tokens"] <= 500
        collected += part["content"]
        if part["next"] is None:
            break
        assert part["truncated"] is True
        arguments = {**part["next"], "max_tokens": 500}
        arguments.pop("ref")
    assert collected == content


async def test_chunk_errors_say_what_exists(client: Client) -> None:
    ref = (await put(client, LINES))["ref"]
    result = await client.call_tool("evidence_get", {"format": "json", "ref": ref, "mode": "chunk", "chunk": 5})
    assert result.is_error and "this item has 1 chunk(s), numbered 0 to 0" in tool_text(result)


async def test_search_stems_english(client: Client) -> None:
    ref = (await put(client, "The test runner was running the suite when it crashed.", title="CI log"))["ref"]
    await put(client, "Unrelated note about supplier quotes.")
    hits = (await client.call_tool("evidence_search", {"format": "json", "query": "run"})).structured_content["hits"]
    assert [h["ref"] for h in hits] == [ref]
    assert hits[0]["score"] > 0 and "running" in hits[0]["snippet"]


@pytest.mark.parametrize("query", ["运费", "供应商", "供应商C的运费", "运"])
async def test_search_finds_short_and_long_chinese_terms(client: Client, query: str) -> None:
    ref = (await put(client, "供应商C的运费是每件0.48美元。数据完整之前不能推荐。", kind="document"))["ref"]
    await put(client, "English only text about freight.", kind="document")
    hits = (await client.call_tool("evidence_search", {"format": "json", "query": query})).structured_content["hits"]
    assert hits and hits[0]["ref"] == ref
    assert query in hits[0]["snippet"]


HOSTILE = [
    '"unbalanced',
    "a AND OR NOT b",
    "NEAR(freight 5)",
    "fre*",
    "-freight",
    "^freight",
    "(freight",
    "freight)",
    "col:freight",
    "'; DROP TABLE evidence; --",
    "*",
    '""',
    "NOT",
    "🙂",
    "  ",
    '{"json": 1}',
    "a" * 2000,
]


@pytest.mark.parametrize("query", HOSTILE)
async def test_hostile_queries_never_error(client: Client, query: str) -> None:
    await put(client, "Supplier C freight is 0.48 USD per piece.")
    result = await client.call_tool("evidence_search", {"format": "json", "query": query})
    assert not result.is_error, tool_text(result)
    assert isinstance(result.structured_content["hits"], list)


async def test_hostile_query_words_still_match_as_text(client: Client) -> None:
    ref = (await put(client, "Supplier C freight is 0.48 USD per piece."))["ref"]
    for hostile in ['"freight', "NEAR(freight", "freight)", "-freight"]:
        hits = (await client.call_tool("evidence_search", {"format": "json", "query": hostile})).structured_content[
            "hits"
        ]
        assert [h["ref"] for h in hits] == [ref], hostile


async def test_search_filters_validity_and_expiry(client: Client) -> None:
    old = (
        await put(
            client, "price list freight 0.52", effective_at="2026-01-01T00:00:00Z", expires_at="2026-06-01T00:00:00Z"
        )
    )["ref"]
    new = (await put(client, "price list freight 0.48", effective_at="2026-06-01T00:00:00Z"))["ref"]

    async def refs(**arguments: Any) -> list[str]:
        hits = (
            await client.call_tool("evidence_search", {"format": "json", "query": "freight price", **arguments})
        ).structured_content["hits"]
        return sorted(h["ref"] for h in hits)

    assert await refs() == [new]  # expired by default
    assert await refs(include_expired=True) == sorted([old, new])
    assert await refs(as_of="2026-03-01T00:00:00Z") == [old]
    assert await refs(as_of="2026-07-01T00:00:00Z") == [new]


async def test_search_filters_task_kind_and_tags(client: Client) -> None:
    a = (await put(client, "freight quote A", task_id="t1", kind="document", tags=["supplier-a", "quote"]))["ref"]
    b = (await put(client, "freight quote B", task_id="t2", kind="web", tags=["quote"]))["ref"]

    async def refs(**arguments: Any) -> list[str]:
        hits = (
            await client.call_tool("evidence_search", {"format": "json", "query": "freight", **arguments})
        ).structured_content["hits"]
        return sorted(h["ref"] for h in hits)

    assert await refs(task_id="t1") == [a]
    assert await refs(kind="web") == [b]
    assert await refs(tags=["quote"]) == sorted([a, b])
    assert await refs(tags=["quote", "supplier-a"]) == [a]


async def test_projects_never_see_each_others_evidence(db_path: Path) -> None:
    async with Client(build_server(Settings(db_path=db_path, project="/projects/a"))) as a:
        ref_a = (await put(a, "shared text about freight"))["ref"]
    async with Client(build_server(Settings(db_path=db_path, project="/projects/b"))) as b:
        missing = await b.call_tool("evidence_get", {"format": "json", "ref": ref_a})
        assert missing.is_error and "no evidence" in tool_text(missing)
        assert (await b.call_tool("evidence_search", {"format": "json", "query": "freight"})).structured_content[
            "hits"
        ] == []
        ref_b = (await put(b, "shared text about freight"))["ref"]
        assert ref_b != ref_a
        deleted = await b.call_tool("evidence_delete", {"ref": ref_a})
        assert deleted.is_error
    async with Client(build_server(Settings(db_path=db_path, project="/projects/a"))) as a:
        assert (await get(a, ref_a))["content"] == "shared text about freight"


async def test_the_evidence_resource_returns_the_content(client: Client) -> None:
    ref = (await put(client, "resource body"))["ref"]
    read = await client.read_resource(f"ctxkeep://evidence/{ref}")
    assert read.contents[0].text == "resource body"


def test_search_keeps_the_rarest_terms_within_the_postings_budget() -> None:
    from ctxkeep.tools.evidence.search import selective_terms

    frequencies = {"common": 90_000, "rare": 3, "middle": 15_000, "second": 6_000}
    assert selective_terms(["common", "rare", "middle", "second", "absent"], frequencies, budget=20_000) == [
        "rare",
        "second",
    ]
    assert selective_terms(["common"], frequencies, budget=20_000) == ["common"]  # at least the rarest one
    assert selective_terms(["absent"], frequencies) == []


async def test_scores_are_positive_even_in_a_store_of_one(client: Client) -> None:
    await put(client, "the only record mentions freight")
    hits = (await client.call_tool("evidence_search", {"format": "json", "query": "freight"})).structured_content[
        "hits"
    ]
    assert len(hits) == 1 and hits[0]["score"] > 0


async def test_a_long_line_in_the_middle_is_read_on_through_next(client: Client) -> None:
    content = "".join(f"short {i}\n" for i in range(5)) + "word " * 8_000 + "\ntail line\n"
    ref = (await put(client, content, kind="file"))["ref"]
    part = await get(client, ref, mode="full", max_tokens=1_000)
    assert part["truncated"] and part["returned_tokens"] <= 1_000
    seen = part["content"]
    while part["next"] is not None:
        arguments = dict(part["next"])
        arguments.pop("ref")
        part = await get(client, ref, **arguments)
        seen += part["content"]
    assert seen.endswith("tail line\n") and "word word" in seen


async def test_dense_chunks_stay_readable(client: Client) -> None:
    content = "the " * 200_000 + "🙂" * 20_000
    ref = (await put(client, content, kind="file"))["ref"]
    assert await read_all_chunks(client, ref) == content


async def test_grep_keeps_to_the_budget_even_for_one_huge_match(client: Client) -> None:
    ref = (await put(client, "needle " + "hay " * 60_000 + "\nneedle again\n", kind="file"))["ref"]
    part = await get(client, ref, mode="grep", pattern="needle", max_tokens=200)
    assert part["returned_tokens"] <= 200 and part["truncated"] and part["next"]["start"] == 2
    rest = await get(client, ref, mode="grep", pattern="needle", start=2)
    assert rest["content"] == "2:needle again\n"


async def test_grep_continues_with_the_context_of_the_next_match(client: Client) -> None:
    content = "".join(f"line {i}{' MATCH' if i % 20 == 0 else ''}\n" for i in range(1, 201))
    ref = (await put(client, content, kind="file"))["ref"]
    first = await get(client, ref, mode="grep", pattern="MATCH", context=2, max_tokens=100)
    assert first["truncated"]
    arguments = dict(first["next"])
    arguments.pop("ref")
    rest = await get(client, ref, **arguments)
    first_line = rest["content"].splitlines()[0]
    assert first_line.endswith("-line " + first_line.split("-")[0])  # starts with the context line before the match


async def test_a_repeated_put_leaves_the_stored_record_as_it_was(client: Client) -> None:
    first = await put(client, "price list 0.52", expires_at="2020-01-01T00:00:00Z", tags=["old"])
    assert (await client.call_tool("evidence_search", {"format": "json", "query": "price list"})).structured_content[
        "hits"
    ] == []
    again = await put(client, "price list 0.52", tags=["current"])
    assert again["ref"] == first["ref"] and again["deduplicated"]
    assert (await client.call_tool("evidence_search", {"format": "json", "query": "price list"})).structured_content[
        "hits"
    ] == []  # still expired
    kept = await client.call_tool("evidence_search", {"format": "json", "query": "price list", "include_expired": True})
    assert [h["ref"] for h in kept.structured_content["hits"]] == [first["ref"]]
    tagged = await client.call_tool(
        "evidence_search", {"format": "json", "query": "price list", "include_expired": True, "tags": ["current"]}
    )
    assert tagged.structured_content["hits"] == []  # the second put's tags are ignored too
    fresh = await put(client, "price list 0.52", title="price list, fetched again", tags=["current"])
    assert not fresh["deduplicated"]  # a new record (another title) is how a refetched copy becomes current
    hits = (await client.call_tool("evidence_search", {"format": "json", "query": "price list"})).structured_content[
        "hits"
    ]
    assert [h["ref"] for h in hits] == [fresh["ref"]]


async def test_snippets_hold_the_match_in_long_texts(client: Client) -> None:
    text = "filler words here. " * 200 + "The team was studying the freight contract. " + "more filler. " * 200
    await put(client, text)
    hit = (await client.call_tool("evidence_search", {"format": "json", "query": "studies"})).structured_content[
        "hits"
    ][0]
    assert "studying" in hit["snippet"] and len(hit["snippet"]) < 400
    cjk = "无关的文字。" * 100 + "数据完整之前不能推荐。" + "其他内容。" * 100
    await put(client, cjk)
    hit = (await client.call_tool("evidence_search", {"format": "json", "query": "推荐"})).structured_content["hits"][0]
    assert "推荐" in hit["snippet"] and len(hit["snippet"]) < 400


async def test_secrets_in_source_and_title_are_redacted(client: Client) -> None:
    stored = await put(
        client,
        "ok",
        source='Bash(curl -H "Authorization: Bearer abcdef1234567890")',
        title="DB_PASSWORD=hunter2hunter2",
    )
    assert stored["redactions"] == 2
    part = await get(client, stored["ref"])
    assert "abcdef1234567890" not in str(part["source"]) and "hunter2hunter2" not in str(part["title"])


async def test_search_widens_when_the_rarest_terms_live_in_another_project(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxkeep.tools.evidence import search as evidence_search

    monkeypatch.setattr(evidence_search, "POSTINGS_BUDGET", 5)
    monkeypatch.setattr(evidence_search.selective_terms, "__defaults__", (5,))
    async with Client(build_server(Settings(db_path=db_path, project="/projects/b"))) as b:
        for i in range(3):
            await put(b, f"zebra note {i}")
    async with Client(build_server(Settings(db_path=db_path, project="/projects/a"))) as a:
        for i in range(6):
            await put(a, f"freight quote {i}")
        hits = (await a.call_tool("evidence_search", {"format": "json", "query": "freight zebra"})).structured_content[
            "hits"
        ]
        assert len(hits) == 6


async def test_search_results_keep_to_their_token_budget(client: Client) -> None:
    from ctxkeep.tokens import count_tokens

    for i in range(30):
        await put(client, f"freight report {i} " + "运费数据 " * 200, title="T" * 3_000 + str(i))
    result = (
        await client.call_tool(
            "evidence_search", {"format": "json", "query": "freight", "limit": 50, "max_tokens": 2_000}
        )
    ).structured_content
    assert result["truncated"] is True and 0 < len(result["hits"]) < 30
    assert count_tokens(json.dumps(result["hits"], ensure_ascii=False)) <= 2_200
    assert all(len(h["title"]) <= 201 for h in result["hits"])
