"""`ctxkeep ui` in a real browser (headless Chromium from Debian's packages) on the demo's database (a coding session
through the hooks), a second session without a checkpoint and hostile stored text: every session is listed; a
session's page shows every injection (compaction repairs included), each shaped output beside its ref and each gate
block with its reason; the timeline, a compare box that never offers a version with itself, a diff, a working set's
slot bars and an evidence search render, refs and identifiers never break; stored `<script>` and `javascript:` links
stay text; nobody gets in without the token.

The pages are loaded with `chromium --headless --dump-dom` (the DOM the browser built) and photographed with
`--screenshot` into tests/artifacts/ (not committed). Skipped, saying so, only when Chromium is absent.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import anyio
import pytest

from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.models.journal import ActionIntentRequest
from ctxkeep.models.memory import MemoryWriteRequest
from ctxkeep.settings import Settings
from ctxkeep.tools.checkpoint import checkpoint_save
from ctxkeep.tools.evidence import evidence_put
from ctxkeep.tools.journal import action_intent
from ctxkeep.tools.memory import memory_write
from ctxkeep.tools.scope import open_scope
from tests.claude_home import Claude, compaction
from tests.conftest import procurement_state
from tests.dom import Element, parse
from tests.paths import TESTS

ROOT = TESTS.parent
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = next(
    (found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))), None
)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
SCRIPT = "<script>alert(1)</script>"
SESSION = "/session?id=demo-session"
JS_LINK = '<a href="javascript:alert(1)">click me</a>'
pytestmark = pytest.mark.slow
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is absent: the viewer's browser tests need it "
    "(Debian: apt-get install -y chromium; .ci/run installs it)",
)


@dataclass
class Served:
    url: str
    token: str
    env: dict[str, str]
    hostile_ref: str
    folder: Path

    def signed_in(self, path: str) -> str:
        """The address that signs the browser in and lands on `path`."""
        return f"{self.url}login?token={quote(self.token)}&next={quote(path, safe='')}"


def _store_hostile_records(env: dict[str, str]) -> str:
    """What an agent might store from a hostile web page: markup in evidence, a memory, a task; an open intent."""

    async def write() -> str:
        async with open_scope(Settings.from_env(env)) as scope:
            put = await evidence_put(
                scope,
                [
                    EvidenceItem(
                        content=f"fetched page\n{SCRIPT}\n{JS_LINK}\nfreight table follows",
                        source="javascript:alert(1)",
                        title="<img src=x onerror=alert(1)>",
                        kind="document",
                    ),
                    EvidenceItem(
                        content="Supplier C portal export: freight 0.48",
                        source="https://portal.supplier-c.example/quotes",
                    ),
                ],
            )
            await memory_write(
                scope,
                MemoryWriteRequest(
                    kind="user_preference",
                    key="reply style",
                    content=f"{SCRIPT} reply briefly",
                    explicit_confirmation=True,
                    source_message_id="msg-<b>9</b>",
                ),
            )
            state = procurement_state(goal=f"Read the page {SCRIPT}", next_action="javascript:alert(4)")
            await checkpoint_save(
                scope, CheckpointSaveRequest(task_id="hostile", state=TaskState.model_validate(state))
            )
            await action_intent(
                scope,
                ActionIntentRequest(
                    task_id="hostile", idempotency_key="hostile:refund:1", action="send refund", target=JS_LINK
                ),
            )
            return str(put.refs[0]) if put.refs else ""

    return anyio.run(write)


def _start(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxkeep", "ui", "--port", "0"],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stderr is not None
    line, deadline = b"", time.monotonic() + 60
    while b"\n" not in line and time.monotonic() < deadline:
        if select.select([proc.stderr], [], [], 1)[0]:
            line += os.read(proc.stderr.fileno(), 4096)
    text = line.decode()
    assert "ctxkeep ui: http://127.0.0.1:" in text, text
    url = text.split("ctxkeep ui: ", 1)[1].split(" ", 1)[0]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the socket is bound before the line; wait until the app answers
        try:
            urllib.request.urlopen(url + "static/style.css", timeout=2).close()
            break
        except OSError:
            time.sleep(0.1)
    return proc, url


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The demo's database and project (a coding session through the hooks: a shaped log, a gate block, a compaction
    repair; the task fix-rate-limiter v1 and v2), hostile records, and a second session s-1 with no checkpoint whose
    hooks injected the records' view at resume and then the repair of a compaction summary."""
    tmp = tmp_path_factory.mktemp("ui")
    claude = Claude(tmp)
    env = {"CTXKEEP_DB": str(claude.db), "CTXKEEP_PROJECT": str(claude.project)}
    demo = subprocess.run(
        [sys.executable, "-m", "ctxkeep", "demo", "--db", str(claude.db)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert demo.returncode == 0, demo.stdout[-2000:]
    hostile_ref = _store_hostile_records(env)
    claude.prompt(f"keep the fix minimal {SCRIPT}")
    claude.prompt("never touch the migrations folder")
    assert "keep the fix minimal" in claude.session_start("resume")
    claude.append(*compaction("Kept the fix minimal. Next: clean up the migrations folder."))
    assert "never touch the migrations folder" in claude.session_start("compact")
    proc, url = _start(env)
    try:
        yield Served(url, (claude.db.parent / "ui-token").read_text().strip(), env, hostile_ref, claude.db.parent)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _get(url: str, headers: dict[str, str] | None = None, data: bytes | None = None) -> tuple[int, dict[str, str], str]:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    request = urllib.request.Request(url, headers=headers or {}, data=data)
    try:
        with urllib.request.build_opener(NoRedirect).open(request, timeout=30) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read().decode()


def browse(url: str) -> Element:
    """The DOM headless Chromium built for the page (a fresh profile each time: no cookie carries over)."""
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="ctxkeep-chromium-") as profile:
        done = subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-2000:]
    return parse(done.stdout)


def photograph(url: str, name: str, height: int = 2200, width: int = 1280) -> Path:
    assert CHROMIUM is not None
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    path.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="ctxkeep-chromium-") as profile:
        subprocess.run(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--screenshot={path}",
                f"--window-size={width},{height}",
                url,
            ],
            capture_output=True,
            timeout=120,
            check=True,
        )
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000
    return path


def assert_inert(dom: Element) -> None:
    """Nothing stored became markup: no script, no javascript: link, no event handler, no image."""
    assert dom.all("script") == [] and dom.all("img") == [] and dom.all("iframe") == []
    assert not [a for a in dom.all("a") if a.attrs.get("href", "").strip().lower().startswith(("javascript:", "data:"))]
    assert not [e for e in dom.all() if any(name.startswith("on") for name in e.attrs)]


def test_a_request_without_the_token_is_refused(served: Served) -> None:
    for path in ("", "task?id=fix-rate-limiter", "evidence?q=QuotaExceeded", "injections", "memories", SESSION):
        status, headers, body = _get(served.url + path)
        assert status == 401 and "Never push to main" not in body and "requests/minute" not in body, path
        assert headers["www-authenticate"] == "Bearer"
    assert _get(served.url, {"Authorization": "Bearer " + "x" * 43})[0] == 401
    assert _get(served.url, {"Authorization": f"Bearer {served.token}", "Host": "attacker.example:80"})[0] == 403
    status, _, body = _get(served.url + "login", data=b"token=wrong&next=/")
    assert status == 401 and "That is not the token" in body
    status, headers, _ = _get(
        served.url + "login", data=f"token={quote(served.token)}&next=/task?id=fix-rate-limiter".encode()
    )
    assert status == 303 and headers["location"] == "/task?id=fix-rate-limiter"
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and served.token not in cookie
    status, headers, body = _get(served.url + "task?id=fix-rate-limiter", {"Cookie": cookie.split(";")[0]})
    assert status == 200 and "Timeline" in body
    assert (
        "default-src 'none'" in headers["content-security-policy"]
        and "script-src" not in headers["content-security-policy"]
    )
    assert _get(served.url + "login?token=x&next=//evil.example")[0] == 401
    assert _get(served.url + f"login?token={quote(served.token)}&next=//evil.example")[1]["location"] == "/"


@needs_chromium
def test_the_browser_without_the_token_sees_only_the_sign_in_link(served: Served) -> None:
    dom = browse(served.url + "task?id=fix-rate-limiter")
    assert "Sign in" in dom.text and "Never push to main" not in dom.text and "PR #128" not in dom.text
    assert dom.all("table") == []


@needs_chromium
def test_the_overview_lists_the_tasks_every_session_and_what_waits_for_a_person(served: Served) -> None:
    dom = browse(served.signed_in("/"))
    tasks = dom.one("table", "tasks")
    assert {a.text for a in tasks.all("a")} >= {"fix-rate-limiter", "hostile"}
    waiting = dom.one("div", "attention")
    assert "PO-1" in waiting.text and "hostile:refund:1" in waiting.text and "outcome unknown" in waiting.text
    assert [li.text for li in waiting.all("li", "intent")] and [li.text for li in waiting.all("li", "approval")]
    sessions = {
        row.all("td")[0].text: [td.text for td in row.all("td")[1:]]
        for row in dom.one("table", "sessions").all("tr")[1:]
    }
    # neither session has a checkpoint of its own: both are listed, with what their hooks showed the model
    assert sessions["demo-session"][0] == "no checkpoint yet" and sessions["demo-session"][3:] == ["1", "1", "1"]
    assert sessions["s-1"][0] == "no checkpoint yet" and sessions["s-1"][2:] == ["2", "2", "0", "0"]  # two prompts
    assert int(sessions["demo-session"][2]) >= 5  # prompts, the todo list, commands, a check, an edit
    photograph(served.signed_in("/"), "ui-overview.png", 1600)


@needs_chromium
def test_a_task_shows_its_timeline_verification_and_the_working_set_slot_bars(served: Served) -> None:
    dom = browse(served.signed_in("/task?id=fix-rate-limiter"))
    rows = dom.one("table", "timeline").all("tr")[1:]
    assert [row.all("td")[0].text for row in rows] == ["v2", "v1"]
    assert all(row.all("td")[3].text == "verified" for row in rows)
    assert "the hash chain of every version verifies" in dom.one("ul", "checks").text
    bars = dom.one("div", "working-set").all("div", "slot")
    tokens = {bar.attrs["data-slot"]: int(bar.attrs["data-tokens"]) for bar in bars}
    assert {"goal", "state", "total"} <= set(tokens)
    assert 0 < tokens["total"] <= 1_500 and all(v > 0 for v in tokens.values())
    for bar in bars:  # each bar's width is its share of the 1,500-token budget the demo asked for
        width = next(c for c in bar.one("span", "fill").classes if c.startswith("w"))
        assert width == f"w{round(100 * int(bar.attrs['data-tokens']) / 1_500)}", bar.attrs
    assert "PR #128" in dom.one("table", "journal").text
    assert "# Resume: fix-rate-limiter" in dom.one("pre", "stored").text
    assert [o.attrs["value"] for o in dom.one("select", name="from").all("option")] == ["1"]
    assert [o.attrs["value"] for o in dom.one("select", name="to").all("option")] == ["2"]
    photograph(served.signed_in("/task?id=fix-rate-limiter"), "ui-task.png")


@needs_chromium
def test_no_version_is_offered_for_comparison_with_itself(served: Served) -> None:
    one = browse(served.signed_in("/task?id=hostile"))  # one version: nothing to compare
    assert one.all("select") == [] and "One version so far: nothing to compare yet." in one.text
    headers = {"Authorization": f"Bearer {served.token}"}
    status, _, body = _get(served.url + "diff?id=fix-rate-limiter&from=2&to=2", headers)
    assert status == 400 and "pick two different versions" in body


@needs_chromium
def test_the_diff_between_two_versions(served: Served) -> None:
    dom = browse(served.signed_in("/diff?id=fix-rate-limiter&from=1&to=2"))
    changes = [[td.text for td in row.all("td")] for row in dom.one("table", "diff").all("tr")[1:]]
    assert ["+", "completed", "Open a pull request from fix/limiter-429", "", ""] in changes
    assert any(c[:2] == ["−", "pending"] for c in changes)
    assert [o.attrs["value"] for o in dom.one("select", name="from").all("option")] == ["1"]


@needs_chromium
def test_an_evidence_search_shows_hits_with_their_source(served: Served) -> None:
    dom = browse(served.signed_in("/evidence?q=QuotaExceeded"))
    hits = dom.one("table", "hits").all("tr")[1:]
    cells = [[td.text for td in hit.all("td")] for hit in hits]
    assert any(c[3] == "tool_result" and c[4] == "Bash" for c in cells), cells  # the log the hook offloaded
    assert all(hit.all("td")[3].one("code", "ident") for hit in hits)  # a kind never breaks ("tool_r esult")
    record = browse(served.signed_in(hits[0].all("a")[0].attrs["href"]))
    assert "INFO  shop.api: GET /orders" in record.one("pre", "stored").text and "--mode lines" in record.text
    portal = browse(served.signed_in("/evidence?q=freight"))
    assert [a.attrs["href"] for a in portal.all("a", "outside")] == ["https://portal.supplier-c.example/quotes"]
    photograph(served.signed_in("/evidence?q=QuotaExceeded"), "ui-search-narrow.png", 1000, width=820)


@needs_chromium
def test_stored_markup_and_javascript_links_are_shown_as_text(served: Served) -> None:
    pages = {
        "search": f"/evidence?q={quote('freight table follows')}",
        "record": f"/evidence/item?ref={served.hostile_ref}",
        "task": "/task?id=hostile",
        "overview": "/",
        "memories": "/memories",
        "injections": "/injections",
        "session": "/session?id=s-1",
    }
    for name, path in pages.items():
        dom = browse(served.signed_in(path))
        assert_inert(dom)
        assert "alert(" in dom.text, name
    record = browse(served.signed_in(pages["record"]))
    assert SCRIPT in record.one("pre", "stored").text and JS_LINK in record.one("pre", "stored").text
    assert "javascript:alert(1)" in record.one("table", "record").text  # the source, as text
    assert "<img src=x onerror=alert(1)>" in record.one("table", "record").text
    task = browse(served.signed_in(pages["task"]))
    assert f"Read the page {SCRIPT}" in task.text and "javascript:alert(4)" in task.text
    assert JS_LINK in task.one("div", "attention").text
    memories = browse(served.signed_in(pages["memories"]))
    assert f"{SCRIPT} reply briefly" in memories.one("table", "memories").text and "msg-<b>9</b>" in memories.text


@needs_chromium
def test_every_injection_of_a_session_is_shown_compaction_repairs_included(served: Served) -> None:
    dom = browse(served.signed_in("/injections"))
    found = {section.attrs["id"]: section for section in dom.all("section", "injection")}
    assert set(found) == {"s-1", "demo-session"}
    rows = [[td.text for td in row.all("td")] for row in found["s-1"].one("table").all("tr")[1:]]
    assert [row[1] for row in rows] == [
        "the records' view (session start or resume)",
        "repair of the compaction summary",
    ]
    assert all(int(row[2].replace(",", "")) > 0 and int(row[3].replace(",", "")) > 0 for row in rows)
    latest = found["s-1"].one("pre", "stored").text
    assert "Rules the summary lost" in latest and "never touch the migrations folder" in latest
    bars = found["s-1"].all("div", "slot")
    assert bars and sum(int(b.attrs["data-tokens"]) for b in bars) > 0
    session = browse(served.signed_in("/session?id=s-1"))
    texts = [pre.text for pre in session.all("pre", "stored")]
    assert len(texts) == 2 and f"keep the fix minimal {SCRIPT}" in texts[0] and "Rules the summary lost" in texts[1]
    photograph(served.signed_in("/injections"), "ui-injections.png")


@needs_chromium
def test_a_session_shows_each_shaped_output_beside_its_ref_and_each_gate_block_with_its_reason(
    served: Served,
) -> None:
    dom = browse(served.signed_in(SESSION))
    entries = dom.one("ol", "shown").all("li", "shown-entry")
    assert [next(c for c in e.classes if c != "shown-entry") for e in entries] == ["offloaded", "blocked", "injected"]
    offload, block, repair = entries
    ref = offload.one("div", "offload-ref").one("a", "ref")
    assert ref.text.startswith("ev_") and ref.attrs["href"] == f"/evidence/item?ref={ref.text}"
    view = offload.one("pre", "stored")
    assert "[ctxkeep: the rest is not lost." in view.text and ref.text in view.text
    assert [a.text for a in view.all("a", "ref")] == [ref.text, ref.text]  # the refs in the view link and never break
    assert "shaped: the model got this view instead of the output" in offload.text
    assert "ctxkeep verification gate: limiter.py changed" in block.one("blockquote", "reason").text
    assert "repair of the compaction summary" in repair.text and repair.all("div", "slot")
    assert "Never push to main" in repair.one("pre", "stored").text
    assert "no checkpoint yet" in dom.one("p", "session-facts").text
    record = browse(served.signed_in(ref.attrs["href"]))
    assert "2,412 lines" in record.one("table", "record").text  # the whole output, behind the ref
    photograph(served.signed_in(SESSION), "ui-session.png", 1540)  # docs/ui.png is this page


def test_refs_and_identifiers_never_break_across_lines() -> None:
    css = re.sub(r"/\*.*?\*/", "", (ROOT / "ctxkeep" / "cli" / "ui" / "static" / "style.css").read_text(), flags=re.S)
    rules = {
        selector.strip(): body for selector, body in (rule.split("{", 1) for rule in css.split("}") if "{" in rule)
    }
    assert "break-word" in rules["td"] and "anywhere" not in rules["td"]  # "tool_r esult" came from `anywhere`
    nowrap = [sel for sel, body in rules.items() if "white-space: nowrap" in body]
    assert any({".ident", ".ref"} <= {part.strip() for part in sel.split(",")} for sel in nowrap), nowrap
    assert "white-space: nowrap" in rules["pre.stored .ref"]


def test_unknown_things_get_a_page_saying_so_not_a_traceback(served: Served) -> None:
    headers = {"Authorization": f"Bearer {served.token}"}
    status, _, body = _get(served.url + "task?id=nosuch", headers)
    assert status == 404 and "no task" in body and "ctxkeep tasks" in body and "Traceback" not in body
    status, _, body = _get(served.url + "diff?id=fix-rate-limiter&from=x&to=2", headers)
    assert status == 400 and "version number" in body
    status, _, body = _get(served.url + "evidence/item?ref=ev_12", headers)
    assert status == 400 and "too short" in body
    status, _, body = _get(served.url + "session?id=nosuch", headers)
    assert status == 404 and "no session &#x27;nosuch&#x27;" in body


@needs_chromium
def test_the_sign_in_file_signs_the_browser_in_and_only_its_owner_can_read_it(served: Served) -> None:
    sign_in = served.folder / "ui-sign-in.html"
    for private in (sign_in, served.folder / "ui-token"):
        assert private.stat().st_mode & 0o077 == 0 and private.stat().st_uid == os.getuid()
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(
        prefix="ctxkeep-chromium-"
    ) as profile:  # the form posts itself, the cookie follows
        done = subprocess.run(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile}",
                "--virtual-time-budget=10000",
                "--dump-dom",
                sign_in.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    dom = parse(done.stdout)
    assert "What the agent sees" in dom.one("h1").text and dom.one("table", "tasks")
