"""The ``ragmetrics`` program in a process of its own: ``eval`` holds the garbage collector through start-up.

Each run is a fresh interpreter calling ``ragmetrics.cli.program`` (what the console script and
``python -m ragmetrics`` call) or ``ragmetrics.cli.main`` (what a caller's own code calls); the script
counts the collector's passes with the standard library's own hooks (``gc.callbacks``, and the audit
event of each socket connect: the first is the judge's server probe, the second the first request).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ragmetrics.testing import FakeLLMServer

SCRIPT = r"""
import gc, json, sys
passes = [0, 0, 0]
connects = []
def on_pass(phase, info):
    if phase == "stop" and len(connects) < 2:
        passes[info["generation"]] += 1
gc.callbacks.append(on_pass)
sys.addaudithook(lambda event, args: connects.append(1) if event == "socket.connect" else None)
from ragmetrics import cli
entry = getattr(cli, sys.argv[1])
sys.argv = ["ragmetrics", *sys.argv[2:]]
code = entry()
seen = {"code": code, "passes": passes, "enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}
print("SEEN " + json.dumps(seen), file=sys.stderr)
"""


def _run(entry: str, *args: str, cwd: Path) -> dict[str, Any]:
    env = dict(os.environ, OPENAI_API_KEY="sk-" + "k" * 20, RAGMETRICS_CACHE_DIR=str(cwd / "cache"))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, entry, *args], env=env, cwd=cwd, capture_output=True, text=True
    )
    seen = [line for line in done.stderr.splitlines() if line.startswith("SEEN ")]
    assert seen, done.stderr[-3000:]
    return json.loads(seen[-1].removeprefix("SEEN "))


def test_eval_holds_the_collector_until_its_first_request_then_freezes_start_up(
    fake_llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    judge = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    args = ("eval", "--example", "--judge", judge, "--metrics", "faithfulness,relevancy", "--quiet")
    program = _run("program", *args, cwd=tmp_path)
    called = _run("main", *args, cwd=tmp_path)  # the same command from a caller's own code
    assert program["code"] == called["code"] == 0
    # the program: few passes before its first request (none of them over the start-up's objects),
    # then the start-up frozen and the collector back on
    assert sum(program["passes"]) * 3 < sum(called["passes"]), (program, called)
    assert program["enabled"] and program["frozen"] > 10_000
    # called in-process, the caller's collector is left as it was
    assert called["enabled"] and called["frozen"] == 0


def test_a_run_without_requests_in_batches_or_stopped_early_turns_the_collector_back_on(
    fake_llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    offline = _run("program", "eval", "--example", "--judge", "offline", "--quiet", cwd=tmp_path)
    assert offline["code"] == 0 and offline["enabled"] and offline["frozen"] > 0  # at its first record
    judge = f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"
    batch = ("--judge", judge, "--metrics", "faithfulness", "--batch", "--poll-interval", "0", "--quiet")
    batched = _run("program", "eval", "--example", *batch, cwd=tmp_path)
    assert batched["code"] == 0 and batched["enabled"] and batched["frozen"] > 0  # before any batch wait
    refused = _run("program", "eval", str(tmp_path / "missing.jsonl"), "--judge", "offline", cwd=tmp_path)
    assert refused["code"] == 2 and refused["enabled"]
