"""Hostile custom JavaScript (issue 17 item 2, and item 10's Infinity): caps hold, the host never dies.

Probes that could hang or crash the interpreter on a regression run in a child ``python -c`` under an
address-space limit and a wall-clock timeout, so a regression fails the test (exit code, timeout)
instead of killing pytest or the machine.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ragmetrics.metrics.evaluators.factory import CustomEvaluator

ROOT = Path(__file__).resolve().parents[2]
PROBE_MEMORY = 2 * 1024**3  # the probe's address space; its sandbox processes inherit it as a hard limit
MICROTASK_FLOOD = "(o) => { (async () => { for(;;) { await 0; } })(); return 1; }"
DEEP = "let r = {}; let c = r; for (let i = 0; i < 100000; i++) { c.a = {}; c = c.a }"
PRELUDE = """
import asyncio, json, os, sys, time
from ragmetrics.metrics.evaluators.factory import CustomEvaluator

async def timed(ev, output="x"):
    started = time.perf_counter()
    r = await ev.evaluate(output)
    return {"status": r.status, "score": r.score, "message": r.message, "details": r.details,
            "seconds": time.perf_counter() - started}
"""


def probe(body: str, timeout: float = 90) -> dict[str, Any]:
    """Run ``body`` (after PRELUDE) in a memory-limited child; its last stdout line is JSON."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + body],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        preexec_fn=functools.partial(resource.setrlimit, resource.RLIMIT_AS, (PROBE_MEMORY, PROBE_MEMORY)),
    )
    assert proc.returncode == 0, f"the probe process died (exit {proc.returncode}): {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_microtask_flood_stops_at_its_cap_and_nothing_queues_behind_it():
    out = probe(f"""
async def main():
    flood = CustomEvaluator({MICROTASK_FLOOD!r}, timeout=1)
    quick = CustomEvaluator("(o) => ({{score: 1, details: o}})")
    started = time.perf_counter()
    stalled = asyncio.ensure_future(timed(flood))
    meanwhile = await timed(quick, "meanwhile")
    meanwhile["finished_at"] = time.perf_counter() - started
    stopped = await stalled
    after = await timed(quick, "after")
    print(json.dumps({{"stopped": stopped, "meanwhile": meanwhile, "after": after}}))
asyncio.run(main())
""")
    stopped, meanwhile, after = out["stopped"], out["meanwhile"], out["after"]
    assert stopped["status"] == "timeout" and stopped["score"] is None
    assert "1 s time limit" in stopped["message"]
    assert stopped["seconds"] < 10  # the 1 s cap holds for the whole evaluation, promise jobs included
    # a second evaluator ran while the flood was spinning (not queued behind it), and right after
    assert meanwhile["score"] == 1.0 and meanwhile["details"]["details"] == "meanwhile"
    assert meanwhile["finished_at"] < stopped["seconds"]
    assert after["score"] == 1.0 and after["seconds"] < 5


def test_a_stall_quickjs_cannot_interrupt_is_killed_at_the_cap():
    # catastrophic backtracking runs inside QuickJS's regex engine, which never checks the time limit:
    # only killing the process stops it (in the host it spun on for hours)
    out = probe("""
async def main():
    stall = await timed(CustomEvaluator("(o) => /(a+)+$/.test('a'.repeat(40) + 'b')", timeout=1))
    after = await timed(CustomEvaluator("(o) => ({score: 1, details: 'next'})"))
    print(json.dumps({"stall": stall, "after": after}))
asyncio.run(main())
""")
    stall, after = out["stall"], out["after"]
    assert stall["status"] == "timeout" and "1 s time limit" in stall["message"]
    assert stall["details"]["error"] == "the sandbox process was killed at the time limit"
    assert stall["seconds"] < 10
    assert after["score"] == 1.0 and after["details"]["details"] == "next"


async def test_a_stalled_script_does_not_hold_up_the_evaluations_beside_it():
    spin = CustomEvaluator("(o) => { while (true) {} }", timeout=4)
    quick = CustomEvaluator("(o) => o.length")
    started = time.perf_counter()
    finished: dict[str, float] = {}

    async def run(name: str, ev: CustomEvaluator) -> Any:
        result = await ev.evaluate("x")
        finished[name] = time.perf_counter() - started
        return result

    results = await asyncio.gather(run("spin", spin), *(run(f"quick{i}", quick) for i in range(3)))
    assert results[0].status == "timeout"
    assert [r.score for r in results[1:]] == [1.0, 1.0, 1.0]
    assert max(finished[f"quick{i}"] for i in range(3)) < min(3.0, finished["spin"])


def test_a_result_nested_100000_levels_deep_is_a_status_not_a_crash():
    out = probe(f"""
async def main():
    deep = await timed(CustomEvaluator("(o) => {{ {DEEP}; return {{score: 1, details: r}} }}"))
    bare = await timed(CustomEvaluator("(o) => {{ {DEEP}; return r }}"))
    print(json.dumps({{"deep": deep, "bare": bare}}))
asyncio.run(main())
""")
    for key in ("deep", "bare"):
        assert out[key]["status"] == "invalid_input" and out[key]["score"] is None
        assert "result cannot be used" in out[key]["message"]
        assert "nested deeper than 100 levels" in out[key]["message"]


def test_a_crash_inside_the_engine_ends_only_its_sandbox_process():
    # QuickJS's own JSON.stringify has no stack check: the script itself crashes the engine (SIGSEGV,
    # after about 2 s of CPU: the generous cap lets it get there on a loaded machine)
    out = probe(f"""
async def main():
    crash = await timed(CustomEvaluator("(o) => {{ {DEEP}; return JSON.stringify(r).length }}", timeout=30))
    again = await timed(CustomEvaluator("(o) => ({{score: 1, details: 'fresh process'}})"))
    print(json.dumps({{"crash": crash, "again": again}}))
asyncio.run(main())
""")
    crash, again = out["crash"], out["again"]
    assert crash["status"] == "invalid_input" and crash["score"] is None
    assert "crashed its sandbox process" in crash["message"] and "SIGSEGV" in crash["message"]
    assert again["score"] == 1.0 and again["details"]["details"] == "fresh process"


def test_quickjs_crashing_at_its_memory_limit_ends_only_the_sandbox_process():
    # at some limits QuickJS segfaults while building the out-of-memory error's backtrace; in the host
    # process that killed the interpreter on the second of these runs
    out = probe("""
async def main():
    bomb = "(o) => { const a = []; while (true) { a.push('x'.repeat(1000) + a.length) } }"
    runs = [await timed(CustomEvaluator(bomb, memory_limit_mb=mb)) for mb in range(28, 40) for _ in range(2)]
    print(json.dumps(runs))
asyncio.run(main())
""")
    assert len(out) == 24, "the host process survived every run"
    for run in out:
        assert run["score"] is None
        # on a loaded machine a bomb can reach its 5 s time cap before its memory cap: either cap stops it
        assert (
            (run["status"] == "invalid_input" and "MB memory limit" in run["message"])
            or (
                run["status"] == "invalid_input"
                and "crashed its sandbox process (killed by SIGSEGV" in run["message"]
            )
            or (run["status"] == "timeout" and "time limit" in run["message"])
        ), run


def test_memory_cap_refuses_a_gigabyte_and_the_sandbox_has_an_address_space_limit():
    out = probe("""
async def main():
    gigabyte = await timed(CustomEvaluator("(o) => new ArrayBuffer(1024 * 1024 * 1024).byteLength"))
    busy = asyncio.ensure_future(timed(CustomEvaluator(
        "(o) => { const end = Date.now() + 3000; while (Date.now() < end) {} return 1 }")))
    limits = []
    for _ in range(50):  # find the sandbox process among this process's children, while it is busy
        await asyncio.sleep(0.1)
        for pid in os.popen(f"pgrep -P {os.getpid()}").read().split():
            try:
                with open(f"/proc/{pid}/cmdline") as f:
                    if "_js_worker" not in f.read():
                        continue
                with open(f"/proc/{pid}/limits") as f:
                    limits += [int(line.split()[3]) for line in f if line.startswith("Max address space")]
            except OSError:  # gone already (pgrep's own shell)
                pass
        if limits:
            break
    print(json.dumps({"gigabyte": gigabyte, "limits": limits, "busy": await busy}))
asyncio.run(main())
""")
    gigabyte = out["gigabyte"]
    assert gigabyte["status"] == "invalid_input" and gigabyte["score"] is None
    assert "64 MB memory limit" in gigabyte["message"]
    # the process that runs the JavaScript cannot grow past a few hundred MB, whatever QuickJS counts
    assert out["limits"] and min(out["limits"]) < 512 * 1024**2  # the busy one (idle ones wait uncapped)
    assert out["busy"]["score"] == 1.0


def test_lone_surrogates_never_reach_the_binding_and_leave_well_formed():
    # handing a lone surrogate to the quickjs binding crashed the host. An output holding one is refused
    # as invalid input before any JavaScript runs (as every evaluator refuses it); one made by the script
    # itself, or written in its source, leaves as U+FFFD
    out = probe(r"""
async def main():
    from ragmetrics.errors import InvalidInputError
    ev = CustomEvaluator("(o) => ({score: o.length === 16 ? 1 : 0, details: o + '\\ud800'})")
    in_source = CustomEvaluator("(o) => ({score: 1, details: 'lone \ud800 in the source'})")
    output = await timed(ev, "Paris is big. 😀")
    try:
        await ev.evaluate("Paris \ud800 is big.")
        refused = ""
    except InvalidInputError as exc:
        refused = str(exc)
    print(json.dumps({"output": output, "source": await timed(in_source), "refused": refused}))
asyncio.run(main())
""")
    assert out["output"]["status"] == "ok" and out["output"]["score"] == 1.0
    assert out["output"]["details"]["details"] == "Paris is big. 😀\ufffd"
    assert (
        out["source"]["score"] == 1.0 and out["source"]["details"]["details"] == "lone \ufffd in the source"
    )
    assert "lone surrogate U+D800" in out["refused"]


@pytest.mark.parametrize(
    ("source", "label"), [("Infinity", "Infinity"), ("-Infinity", "-Infinity"), ("NaN", "NaN")]
)
async def test_a_non_finite_score_is_invalid_input_in_javascript_and_python(source, label):
    py_value = float(label.replace("Infinity", "inf"))
    for ev in (
        CustomEvaluator(f"(o) => ({{score: {source}, details: 'odd'}})"),
        CustomEvaluator(f"(o) => {source}"),
        CustomEvaluator(lambda o: {"score": py_value, "details": "odd"}),
        CustomEvaluator(lambda o: py_value),
    ):
        result = await ev.evaluate("x")
        assert result.score is None and result.passed is None and result.status == "invalid_input"
        assert result.message == f"custom: the function returned a score that is {label}, not a finite number"


async def test_a_result_over_the_size_cap_is_refused():
    result = await CustomEvaluator("(o) => ({score: 1, details: 'x'.repeat(9 * 1024 * 1024)})").evaluate("x")
    assert result.score is None and result.status == "invalid_input"
    assert "over the limit of 8388608" in (result.message or "")


async def test_an_output_larger_than_the_memory_cap_is_refused_before_it_is_sent():
    started = time.perf_counter()
    result = await CustomEvaluator("(o) => 1", memory_limit_mb=1).evaluate("x" * (2 * 1024 * 1024))
    assert result.score is None and "1 MB memory limit" in (result.message or "")
    assert "cannot fit" in result.details["error"] and time.perf_counter() - started < 5


AFTER_SETTLE = (
    "(o) => {{ Promise.resolve().then(() => Promise.resolve()).then(() => {{ {body} }}); return 1; }}"
)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # 900 levels deep, as JSON text in the harness's reply shape
        (
            "globalThis.__rm_result = JSON.stringify({ok: true, nonfinite: null, value: "
            "JSON.parse('['.repeat(900) + ']'.repeat(900))})",
            "nested deeper than 100 levels",
        ),
        # 20 M characters of details
        (
            "globalThis.__rm_result = JSON.stringify({ok: true, nonfinite: null, "
            "value: {score: 1, details: 'x'.repeat(20000000)}})",
            "over the limit of 8388608",
        ),
        ("globalThis.__rm_result = {ok: true}", "is not the harness's JSON text"),
        ("globalThis.__rm_result = '[1, 2'", "is not valid JSON"),
        ("globalThis.__rm_result = '[1]'", "is not the harness's reply"),
    ],
    ids=["900-deep", "20M-chars", "object", "not-json", "wrong-shape"],
)
def test_the_result_caps_hold_on_a_result_rewritten_after_settle(body: str, expected: str) -> None:
    """Issue 22, item 15: a microtask queued to run after ``settle`` rewrites the result global."""
    source = AFTER_SETTLE.format(body=body)
    out = probe(f"""
async def main():
    r = await timed(CustomEvaluator({source!r}, memory_limit_mb=256))
    print(json.dumps({{"r": r}}))
asyncio.run(main())
""")
    result = out["r"]
    assert result["status"] == "invalid_input" and result["score"] is None, result
    assert expected in result["message"], result["message"]
