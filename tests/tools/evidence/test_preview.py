"""shape_tool_output: deterministic previews by kind and source tool (seed 001's table)."""

from __future__ import annotations

from ctxkeep.tools.shared.preview import shape_tool_output


def test_a_listing_shows_25_entries_then_how_many_more() -> None:
    listing = "\n".join(f"src/module_{i}.py" for i in range(100))
    preview = shape_tool_output(listing, "tool_result", "Glob")
    assert preview.splitlines()[:25] == listing.splitlines()[:25]
    assert preview.splitlines()[-1] == "… 75 more entries" and len(preview.splitlines()) == 26


def test_grep_shows_15_matches() -> None:
    matches = "\n".join(f"a.py:{i}: freight = {i}" for i in range(40))
    preview = shape_tool_output(matches, "tool_result", "Grep")
    assert len(preview.splitlines()) == 16 and preview.endswith("… 25 more matches")


def test_shell_output_keeps_the_tail_the_exit_code_and_the_error_lines() -> None:
    lines = [f"step {i} ok" for i in range(2000)]
    lines[10] = "ERROR: database connection refused"
    output = "\n".join(lines) + "\n<returncode>2</returncode>"
    preview = shape_tool_output(output, "tool_result", "Bash(pytest -x)")
    assert preview.startswith("exit code: 2\n")
    assert "ERROR: database connection refused" in preview
    assert preview.endswith("<returncode>2</returncode>")
    assert len(preview.encode()) < 5_000 and "earlier lines not shown" in preview


def test_a_large_file_shows_head_and_tail() -> None:
    content = "\n".join(f"def function_{i}(): pass" for i in range(2000))
    preview = shape_tool_output(content, "file", "Read")
    assert preview.startswith("def function_0(): pass") and preview.endswith("def function_1999(): pass")
    assert "lines not shown" in preview and len(preview.encode()) <= 4_200


def test_a_small_file_is_its_own_preview() -> None:
    content = "small = True\n" * 100
    assert shape_tool_output(content, "file", "Read") == content


def test_search_results_show_at_most_8() -> None:
    results = "\n\n".join(f"Result {i}\nhttps://example.com/{i}\nSnippet {i}" for i in range(12))
    preview = shape_tool_output(results, "web", "WebSearch")
    assert "Result 7" in preview and "Result 8" not in preview and preview.endswith("… 4 more results")


def test_very_long_lines_are_clipped() -> None:
    preview = shape_tool_output("x" * 50_000, "tool_result", "ls")
    assert len(preview) < 400 and "(+49700 chars)" in preview
