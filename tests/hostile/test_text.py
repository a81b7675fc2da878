"""Hostile inputs for the text and structured evaluators (issue 17, items 3 and 4, and item 10's JSON).

Regex compilation that could eat memory runs in a subprocess under RLIMIT_AS, so a regression fails
the test instead of taking the machine down. Time bounds are generous: the machine is shared.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ragmetrics import ConfigError
from ragmetrics.metrics.evaluators.factory import (
    ExactMatchEvaluator,
    HtmlValidationEvaluator,
    JsonMatchEvaluator,
    JsonValidityEvaluator,
    RegexMatchEvaluator,
)

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 2 * 1024**3  # bytes of address space for the probe process


def _limit_memory() -> None:  # runs in the child, before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _run_limited(code: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        preexec_fn=_limit_memory,  # only sets a resource limit: safe before exec
        check=False,
    )


# -- item 3: regex compilation ---------------------------------------------------------------------


def test_regex_repetition_bombs_are_refused_promptly_under_a_memory_limit():
    probe = """
        import json, time
        from ragmetrics import ConfigError
        from ragmetrics.metrics.evaluators.factory import RegexMatchEvaluator

        out = {}
        for pattern in ["a{1000000000}", "(?:(?:a{1000}){1000}){1000}", "(?:a{1000}){1000}",
                        "a{1000000,}", "(?x) (?: a{1000} ) {1000}", "(?:[a-z]{1000}|\\\\d{1000}){1000}",
                        "x" * 10_001]:
            started = time.perf_counter()
            try:
                RegexMatchEvaluator(pattern)
                outcome = "compiled"
            except ConfigError as exc:
                outcome = "ConfigError: " + str(exc)
            out[pattern[:40]] = [outcome, time.perf_counter() - started]
        # patterns with large *upper* bounds, or many small counts, compile and match as before
        uuid = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
        ok = {
            "uuid": RegexMatchEvaluator(uuid).evaluate_sync("123e4567-e89b-12d3-a456-426614174000").score,
            "upper": RegexMatchEvaluator("(?s)^.{0,5000}$").evaluate_sync("x" * 5000).score,
            "too_long": RegexMatchEvaluator("(?s)^.{0,5000}$").evaluate_sync("x" * 5001).score,
            "huge_upper": RegexMatchEvaluator("^a{0,1000000000}$").evaluate_sync("aaa").score,
            "at_limit": RegexMatchEvaluator("a{100000}").evaluate_sync("a" * 100_000).score,
        }
        print(json.dumps({"refused": out, "accepted": ok}))
    """
    started = time.perf_counter()
    done = _run_limited(probe)
    assert done.returncode == 0, f"probe died (rc {done.returncode}): {done.stderr[-2000:]}"
    assert "MemoryError" not in done.stderr
    report = json.loads(done.stdout)
    for pattern, (outcome, seconds) in report["refused"].items():
        assert outcome.startswith("ConfigError: regex: pattern "), (pattern, outcome)
        assert pattern[:12] in outcome, outcome  # names the pattern
        assert "10,000" in outcome or "100,000" in outcome, outcome  # names the bound
        assert seconds < 2.0, (pattern, seconds)
    accepted = {"uuid": 1.0, "upper": 1.0, "too_long": 0.0, "huge_upper": 1.0, "at_limit": 1.0}
    assert report["accepted"] == accepted
    assert time.perf_counter() - started < 60


def test_regex_matching_memory_is_capped_by_output_length_and_capture_groups():
    probe = """
        import json, time
        from ragmetrics.metrics.evaluators.factory import RegexMatchEvaluator

        groups50 = "^(?:" + "(" * 50 + "a" + ")" * 50 + "|b)*$"
        out = {}
        for name, pattern, text in [
            ("10 MB output", "^(?:a|ab|b)*$", "ab" * 5_000_000),  # exhausted 4 GB
            ("50 groups, 1 MB", groups50, "ab" * 500_000),  # exhausted 4 GB
            ("1 group, 1 MB", "^(?:(a)|b)*$", "ab" * 500_000),  # within the budget: ~100 MB
            ("50 groups, 78 KB", groups50, "ab" * 39_000),
        ]:
            started = time.perf_counter()
            result = RegexMatchEvaluator(pattern, timeout=5).evaluate_sync(text)
            out[name] = [result.status, result.score, result.message, time.perf_counter() - started]
        print(json.dumps(out))
    """
    done = _run_limited(probe)
    assert done.returncode == 0, f"probe died (rc {done.returncode}): {done.stderr[-2000:]}"
    report = json.loads(done.stdout)
    for name in ("10 MB output", "50 groups, 1 MB"):
        status, score, message, seconds = report[name]
        assert status == "invalid_input" and score is None and seconds < 5.0, (name, report[name])
        assert "over the limit of" in message and "not matched" in message
    assert "max_chars 1,000,000" in report["10 MB output"][2]
    assert "4,000,000 characters / (1 + 50 capture groups)" in report["50 groups, 1 MB"][2]
    assert report["1 group, 1 MB"][:2] == ["ok", 1.0]
    assert report["50 groups, 78 KB"][:2] == ["ok", 1.0]


def test_regex_refusal_names_the_shortened_pattern_and_the_limit():
    pattern = "(?:" + "b" * 300 + "a{1000}){1000}"
    with pytest.raises(ConfigError, match=r"over 100,000 items") as caught:
        RegexMatchEvaluator(pattern)
    message = str(caught.value)
    assert "(?:bbbb" in message and "bbbb ... bbbb" in message and "{1000}){1000}" in message
    assert len(message) < 600


def test_the_fallback_bound_never_undercounts_the_parsed_size():
    # Used only if the regex package's private parser changes shape: it must stay an upper bound.
    from ragmetrics.metrics.evaluators.text import _textual_bound, _unrolled_size

    patterns = [
        "a{5}",
        r"\d{4}-\d{2}-\d{2}",
        "(?:a{1000}){1000}",
        "(?x) (?: a{1000} ) {1000}",
        "(?:[a-z]{10}|\\d{20}){30}",
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}",
        "(a{3}(?:b{4}){5}){6}",
    ]
    for pattern in patterns:
        assert _textual_bound(pattern) >= (_unrolled_size(pattern, 0) or 0), pattern


# -- item 4: html_validation -----------------------------------------------------------------------

HOSTILE_HTML = {
    "40k <div> then 40k </p>": ("<div>" * 40_000 + "</p>" * 40_000, 1.0),
    "<p> then 100k '<a'": ("<p>" + "<a" * 100_000, 1.0),
    "<p> then 20k '<!--'": ("<p>" + "<!--" * 20_000, 1.0),
    "top-level 100k '<a'": ("<a" * 100_000, 0.0),
    "unclosed comment after an element": ("<p>x</p><!--" + "<!--" * 20_000, 0.0),
}


async def _seconds(text: str):
    started = time.perf_counter()
    result = await HtmlValidationEvaluator().evaluate(text)
    return time.perf_counter() - started, result


@pytest.mark.parametrize("name", list(HOSTILE_HTML))
async def test_html_validation_is_linear_on_hostile_markup(name: str):
    text, expected = HOSTILE_HTML[name]
    elapsed, result = await _seconds(text)
    # 2 s, or on a loaded machine 5x the time of ordinary markup of the same length (was 37-43 s)
    ordinary, _ = await _seconds(("<div><p>x</p></div>" * len(text))[: len(text)])
    assert elapsed < max(2.0, 5 * ordinary), f"{name}: {elapsed:.2f} s (ordinary markup: {ordinary:.2f} s)"
    assert result.score == expected, (name, result.reasoning)
    if name.startswith("<p> then"):
        assert result.details["unterminated"] in {"tag", "comment"}
        assert "unterminated" in result.reasoning


async def test_html_over_the_default_size_cap_is_a_status_not_a_parse():
    started = time.perf_counter()
    result = await HtmlValidationEvaluator().evaluate("<p>" + "x" * 1_000_001 + "</p>")
    assert time.perf_counter() - started < 1.0
    assert result.score is None and result.status == "invalid_input"
    assert "over the limit of 1,000,000 (max_chars)" in (result.message or "")


async def _max_tick_gap(work) -> tuple[float, int, object]:
    """Run ``work`` while a ticker task sleeps 5 ms at a time; the longest gap between its ticks."""
    gaps: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    try:
        result = await work
    finally:
        stop.set()
        await task
    return max(gaps), len(gaps), result


async def test_a_slow_regex_match_does_not_stall_the_event_loop():
    """Event-based, not wall-clock: while the match runs, the loop keeps running other coroutines.

    A match run on the loop would finish (as a timeout) inside the task's first step, before this
    coroutine resumed; off the loop the task is still waiting after any number of loop turns.
    """
    ev = RegexMatchEvaluator(r"(a|aa)+$", timeout=1.0)  # catastrophic backtracking, stopped at 1 s
    started = time.perf_counter()
    task = asyncio.ensure_future(ev.evaluate("a" * 60 + "!"))
    turns = 0
    while not task.done() and turns < 200:
        await asyncio.sleep(0)  # one loop turn: runs only if nothing holds the loop
        turns += 1
    assert turns == 200 and not task.done(), "the match held the event loop"
    result = await task
    elapsed = time.perf_counter() - started
    assert result.status == "timeout" and elapsed >= 0.9


async def test_a_slow_html_parse_does_not_stall_the_event_loop_or_the_fast_evaluators():
    big = "<math><div>" * 60_000  # 660 KB, a few hundred milliseconds of tokenizing
    html, exact = HtmlValidationEvaluator(), ExactMatchEvaluator()
    finished: list[str] = []

    async def timed(name: str, coro):
        result = await coro
        finished.append(name)
        return result

    started = time.perf_counter()
    gap, ticks, results = await _max_tick_gap(
        asyncio.gather(timed("html", html.evaluate(big)), timed("exact", exact.evaluate("a", "a")))
    )
    elapsed = time.perf_counter() - started
    assert finished == ["exact", "html"]  # the fast one did not queue behind the slow one
    assert results[0].score == 1.0 and results[1].score == 1.0
    assert gap < min(0.5, elapsed / 3), f"the loop stalled for {gap:.2f} s of {elapsed:.2f} s ({ticks} ticks)"


# -- item 10: exact JSON numbers --------------------------------------------------------------------


async def test_long_json_integers_are_valid_and_compared_exactly():
    before = sys.get_int_max_str_digits()
    digits = "7" * 5_000
    validity = await JsonValidityEvaluator().evaluate('{"n": ' + digits + "}")
    assert validity.passed, validity.reasoning
    same = await JsonMatchEvaluator().evaluate("[" + digits + "]", "[" + digits + "]")
    off_by_one = await JsonMatchEvaluator().evaluate("[" + digits + "]", "[" + digits[:-1] + "8]")
    assert same.score == 1.0 and off_by_one.score == 0.0
    assert sys.get_int_max_str_digits() == before  # no process-wide setting was changed


async def test_json_match_compares_numbers_exactly_not_as_floats():
    ev = JsonMatchEvaluator()
    apart = await ev.evaluate('{"x": 1e400}', '{"x": 1e401}')
    assert apart.score == 0.0
    assert apart.details["different"] == [{"path": "$.x", "output": "1E+400", "expected": "1E+401"}]
    assert (await ev.evaluate('{"x": 1e400}', '{"x": 10e399}')).score == 1.0
    assert (await ev.evaluate("[1, 1.0, 100, 0.1, -0]", "[1.0, 1, 1e2, 0.10, 0]")).score == 1.0
    assert (await ev.evaluate('{"x": 0.1000000000000000000001}', {"x": 0.1})).score == 0.0
    assert (await ev.evaluate('{"x": 0.1}', {"x": 0.1})).score == 1.0
    assert (await ev.evaluate("[true, 1]", "[1, true]")).score == 0.0
    beyond = "1e99999999999999999999"  # an exponent past decimal's range: compared by its literal
    assert (await ev.evaluate(f"[{beyond}]", f"[{beyond.upper()}]")).score == 1.0
    assert (await ev.evaluate(f"[{beyond}]", "[1e99999999999999999998]")).score == 0.0
    assert (await JsonValidityEvaluator().evaluate(f"[{beyond}, -{beyond}]")).passed
