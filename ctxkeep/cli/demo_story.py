"""The session `ctxkeep demo` replays: a coding agent fixing a bug in a small web service (`shop-api`).

What the user typed, what the tools printed, what the agent saved and what Claude Code's summary said, as plain data.
Everything is deterministic: the same story, the same bytes, on every run.
"""

from __future__ import annotations

from typing import Any

ASK = (
    "GET /orders answers 500 when a client goes over its quota; it should answer 429. Fix it in "
    "src/shop/limiter.py and make tests/test_limiter.py pass."
)
RULE = "Never push to main: open a pull request from the branch fix/limiter-429."
OPEN_PR = "Open a pull request from fix/limiter-429"
TODOS = [
    {"content": "Find why over-quota requests get 500", "status": "completed"},
    {"content": "Return 429 with Retry-After from the limiter", "status": "in_progress"},
    {"content": OPEN_PR, "status": "pending"},
]
LOG_COMMAND = "tail -n 2400 logs/app.log"
TEST_COMMAND = "pytest -q tests/test_limiter.py"
EXCEPTION = "shop.limiter.QuotaExceeded: key k1 over 100 requests/minute"
FAILED_TEST = (
    "F.......................................................................................................\n"
    "=================================== FAILURES ===================================\n"
    "___________________________ test_over_quota_gets_429 ___________________________\n"
    "\n"
    "    def test_over_quota_gets_429(client):\n"
    "        for _ in range(100):\n"
    '            client.get("/orders", headers={"X-Api-Key": "k1"})\n'
    '        response = client.get("/orders", headers={"X-Api-Key": "k1"})\n'
    ">       assert response.status_code == 429\n"
    "E       assert 500 == 429\n"
    "\n"
    "tests/test_limiter.py:88: AssertionError\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_limiter.py::test_over_quota_gets_429 - assert 500 == 429\n"
    "1 failed, 240 passed in 3.21s\n"
)
PASSED_TEST = "241 passed in 3.05s\n"
LIMITER = "src/shop/limiter.py"
OLD_CODE = "        raise QuotaExceeded(key, self.limit)"
NEW_CODE = '        return Response(status=429, headers={"Retry-After": str(self.window_left(key))})'
# What Claude Code's compaction wrote: the fix is there, the rule turned into its opposite, the pull request gone.
SUMMARY = (
    "The user asked to fix GET /orders answering 500 instead of 429 over quota. The limiter in src/shop/limiter.py "
    "now returns 429 with Retry-After; tests/test_limiter.py passes (241 passed). Next: push the fix to main."
)
GOAL = "Over-quota requests to GET /orders get 429 with Retry-After, not 500"


def app_log() -> str:
    """The service's log as `tail -n 2400` prints it: 180 KB of requests, two of them the 500s the user saw."""
    lines = []
    for n in range(2400):
        minute, second = divmod(n, 60)
        at = f"2026-12-01 09:{minute % 60:02d}:{second:02d},{(n * 37) % 1000:03d}"
        if n in (1811, 2207):
            lines += [
                f"{at} ERROR shop.api: GET /orders key=k1 -> 500 Internal Server Error",
                "Traceback (most recent call last):",
                '  File "/srv/shop-api/src/shop/api.py", line 57, in orders',
                "    limiter.check(request.api_key)",
                '  File "/srv/shop-api/src/shop/limiter.py", line 41, in check',
                "    raise QuotaExceeded(key, self.limit)",
                EXCEPTION,
            ]
        else:
            lines.append(f"{at} INFO  shop.api: GET /orders key=k{n % 7 + 1} -> 200 in {5 + n % 23} ms")
    return "\n".join(lines) + "\n"


def saved_state(log_ref: str) -> dict[str, Any]:
    """The task as the agent saves it once the tests pass (v1)."""
    return {
        "goal": GOAL,
        "done_criteria": ["tests/test_limiter.py passes", "a pull request from fix/limiter-429 is open"],
        "constraints": [RULE],
        "plan": ["Find the cause", "Return 429 from the limiter", "Run the tests", OPEN_PR],
        "completed": [
            "Found the cause: QuotaExceeded raised outside the middleware (limiter.py line 41)",
            "The limiter returns 429 with Retry-After",
            "tests/test_limiter.py passes (241 passed)",
        ],
        "pending": [OPEN_PR],
        "decisions": ["Answer over-quota requests in the limiter, not in the error handler"],
        "facts": [{"key": "failing test", "value": "test_over_quota_gets_429", "source_ref": log_ref}],
        "evidence_refs": [log_ref],
        "phase": "review",
        "next_action": "Push the branch fix/limiter-429 and open the pull request",
    }


def trusting_the_summary(state: dict[str, Any]) -> dict[str, Any]:
    """What an agent that believed the summary would save: the rule gone, the pull request gone, main as the target."""
    return {**state, "constraints": [], "pending": [], "next_action": "Push the fix to main"}


def after_the_pull_request(state: dict[str, Any], pr: str) -> dict[str, Any]:
    """v2: the pull request opened, so the pending item moves to completed."""
    return {
        **state,
        "completed": [*state["completed"], OPEN_PR],
        "pending": [],
        "facts": [*state["facts"], {"key": "pull request", "value": pr, "source_ref": "action_result"}],
        "phase": "done",
        "next_action": f"Wait for the review of {pr}",
    }
