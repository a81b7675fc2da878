"""The progress bar's ETA waits for a settled rate, and its cache counter counts calls (issue 23)."""

from __future__ import annotations

import io

from ragmetrics.pipeline.progress import ProgressBar


def _bar(total: int) -> ProgressBar:
    return ProgressBar(total, enabled=True, stream=io.StringIO(), min_interval_s=0)


def test_no_eta_from_the_first_row_after_a_slow_start() -> None:
    # 400 rows, 16 in flight: the first finishes after 3 s of start-up, then 16 rows take 0.5 s each burst
    bar = _bar(400)
    t0 = bar.started
    bar.update(1, now=t0 + 3.0)
    assert "ETA ?" in bar.line(t0 + 3.0)  # before: 400 rows at 1 row / 3 s, "ETA 19:57"
    bar.update(5, now=t0 + 3.2)
    assert "ETA ?" in bar.line(t0 + 3.2)  # too few rows and too little time since the first
    bar.update(33, now=t0 + 4.0)  # 32 rows in 1 s since the first: 367 rows left, 11.5 s
    eta = bar.line(t0 + 4.0).split("ETA ")[1].split(",")[0]
    assert eta == "00:11"
    bar.update(400, now=t0 + 16.0)
    assert "ETA 00:00" in bar.line(t0 + 16.0)


def test_a_small_run_gets_an_eta_after_two_more_rows_and_a_second() -> None:
    bar = _bar(12)
    t0 = bar.started
    bar.update(1, now=t0 + 1.0)
    bar.update(3, now=t0 + 2.0)
    assert "ETA 00:05" in bar.line(t0 + 2.0)


def test_the_cache_counter_counts_calls_made_and_hits_not_lookups() -> None:
    bar = _bar(10)
    bar.update(4, cache_hits=100, cache_requests=1000, calls=400)
    line = bar.line()
    assert "400 calls, 100 cached" in line and "1000" not in line


def test_a_run_that_makes_no_call_and_hits_nothing_shows_no_cache_counter() -> None:
    # the offline judge: 228 lookups, 0 calls; before: "cache 0/228"
    bar = _bar(12)
    bar.update(12, cache_hits=0, cache_requests=228, calls=0)
    assert "cache" not in bar.line() and "calls" not in bar.line()
