"""The canaries and the judge gate in the HTML report, in the real headless browser, and in eval's JUnit.

A schema-only judge (``FakeLLMServer(answer="schema")``) fails its canaries: their banner is the very
first one, the judge-health banner follows, and a "Canaries" card says FAILED 0/3; the fake's default
mode passes them: a "Canaries" card, no banner. ``--junit-xml`` carries them as properties.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from ragmetrics.cli.app import main
from ragmetrics.testing import FakeLLMServer
from tests.report.test_browser import Page, context

__all__ = ["context"]  # a fixture, imported for pytest

BANNERS = "() => [...document.querySelectorAll('.banner')].map(b => ({id: b.id, text: b.textContent}))"
CARDS = """() => [...document.querySelectorAll('.stat')].map(s => ({
  label: s.querySelector('dt').textContent, value: s.querySelector('.v').textContent,
  shown: s.getBoundingClientRect().height > 0}))"""


def _eval(answer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, Path, Path]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    report, junit = tmp_path / f"{answer}.html", tmp_path / f"{answer}.xml"
    with FakeLLMServer(answer=answer) as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        code = main(
            ["eval", "--example", "--metrics", "faithfulness,relevancy", "--judge", spec, "--quiet"]
            + ["--fail-under", "0", "--report", str(report), "--junit-xml", str(junit)]
        )
    return code, spec, report, junit


def _canary_properties(junit: Path, spec: str) -> list[dict[str, str]]:
    cases = ET.parse(junit).getroot().findall(".//testcase")
    assert cases
    return [
        {
            p.get("name", "").removeprefix(f"canaries[{spec}]."): p.get("value", "")
            for p in case.iter("property")
            if p.get("name", "").startswith(f"canaries[{spec}].")
        }
        for case in cases
    ]


def test_a_schema_only_judge_gets_the_canary_banner_first_then_the_judge_health_one(
    context, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, spec, report, junit = _eval("schema", tmp_path, monkeypatch)
    assert code == 5
    page = Page(context, report)
    banners = page.page.evaluate(BANNERS)
    assert [b["id"] for b in banners][:2] == ["canary-banner", "judge-health-banner"], banners
    assert f"The judge {spec} failed its canaries" in banners[0]["text"]
    assert "not reading its inputs" in banners[1]["text"]
    assert page.page.locator("#canary-banner").is_visible()
    assert page.page.locator("#judge-health-banner").is_visible()
    cards = {c["label"]: c for c in page.page.evaluate(CARDS)}
    assert cards["Canaries"]["value"] == "FAILED 0/3" and cards["Canaries"]["shown"], cards
    assert "Judge health" in cards
    page.clean()
    for props in _canary_properties(junit, spec):
        # the canaries' one extraction and its re-ask: no span is in the answer, so nothing is verified
        assert props == {"passed": "false", "probes_passed": "0", "probes": "3", "calls": "2"}


def test_a_reading_judge_gets_a_canary_card_and_no_banner(
    context, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, spec, report, junit = _eval("offline", tmp_path, monkeypatch)
    assert code == 0
    page = Page(context, report)
    assert page.page.evaluate(BANNERS) == []
    cards = {c["label"]: c for c in page.page.evaluate(CARDS)}
    assert cards["Canaries"]["value"] == "passed 3/3" and cards["Canaries"]["shown"], cards
    page.clean()
    for props in _canary_properties(junit, spec):
        assert props == {"passed": "true", "probes_passed": "3", "probes": "3", "calls": "2"}
