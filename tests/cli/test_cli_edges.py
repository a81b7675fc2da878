"""Daily-use rough edges of `ragmetrics eval` and `ragmetrics estimate` (issue 14), run in-process."""

from __future__ import annotations

import json

import pytest

from ragmetrics.cli.app import main


def test_quiet_prints_no_judge_banner(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--example", "--judge", "offline", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "judge" not in captured.err


def test_only_non_judged_evaluators_name_no_judge(capsys: pytest.CaptureFixture[str]) -> None:
    # the example rows have references (issue 23), so rouge and exact_match score every one of them
    assert main(["eval", "--example", "--metrics", "rouge,exact_match"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "no judge configured" not in out and "judging with" not in out
    assert out.lstrip().startswith("metric") and "rouge" in out


def test_judged_run_still_names_its_judge(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--example", "--limit", "1", "--metrics", "rouge,faithfulness"]) == 0
    out = capsys.readouterr().out
    assert "offline heuristic judge" in out.splitlines()[0]
    [summary] = [line for line in out.splitlines() if line.startswith("1 samples, ")]
    assert "0 LLM calls" in summary and "cache" not in summary, "no LLM called, no cache to report"


@pytest.mark.parametrize(
    ("spec", "variable"),
    [("openai:gpt-4o-mini", "OPENAI_API_KEY"), ("anthropic:claude-3-5-haiku-latest", "ANTHROPIC_API_KEY")],
)
def test_estimate_needs_no_api_key(
    spec: str, variable: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert main(["estimate", "--example", "--judge", spec, "--json"]) == 0, capsys.readouterr().err
    estimate = json.loads(capsys.readouterr().out)
    assert estimate["calls"] == 24 + 2 and estimate["cost_usd"] > 0  # priced although no key is set
    assert estimate["canary_calls"] == 2
    # A run still needs the key, and says which variable to set.
    assert main(["eval", "--example", "--judge", spec]) == 2
    assert variable in capsys.readouterr().err


def test_worst_samples_cut_long_claims_with_an_ellipsis(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--example", "--worst", "12", "--judge", "offline"]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    claims = [line for line in lines if line.startswith(("NOT_FOUND:", "CONTRADICTED:"))]
    long = [line for line in claims if len(line.split(": ", 1)[1]) >= 100]
    assert long, claims  # the example has claims longer than the terminal budget
    assert all(line.endswith("...") for line in long), long
