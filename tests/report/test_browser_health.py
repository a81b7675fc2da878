"""The judge-health banner (issue 21) in a real browser, at 1280 and 1920 px.

A run whose judge only fills the response schema (``FakeLLMServer(answer="schema")``: none of its
spans or quotes is in the texts it was given) shows the banner first, above the run's figures, whole
and in view, naming the judge; its Judge health figure reads 0%. A run of the offline judge shows no
such banner and reads 100%.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from ragmetrics.evaluation import evaluate_sync
from ragmetrics.report import write_html_report
from ragmetrics.testing import FakeLLMServer
from tests.report.test_browser import ARTIFACTS, Page, context

__all__ = ["context"]  # fixture, imported for pytest

BANNER = """() => { const b = document.getElementById('judge-health-banner');
  if (!b) return null;
  const r = b.getBoundingClientRect(), stats = document.querySelector('dl.stats').getBoundingClientRect();
  const style = getComputedStyle(b);
  return {text: b.innerText, role: b.getAttribute('role'), left: r.left, right: r.right, height: r.height,
    width: document.documentElement.clientWidth, aboveStats: r.bottom <= stats.top,
    visible: style.display !== 'none' && style.visibility !== 'hidden' && r.height > 0,
    cut: b.scrollWidth > b.clientWidth + 1 || b.scrollHeight > b.clientHeight + 1,
    page: document.documentElement.scrollWidth - document.documentElement.clientWidth}; }"""
HEALTH_STAT = """() => [...document.querySelectorAll('dl.stats .stat')]
  .filter(s => s.querySelector('dt').textContent.startsWith('Judge health'))
  .map(s => s.querySelector('.v').textContent)"""


def _example() -> Path:
    return Path(str(resources.files("ragmetrics") / "data" / "example.jsonl"))


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("health")
    out = {}
    with FakeLLMServer(answer="schema") as srv:
        spec = f"openai:gpt-4o-mini@{srv.openai_base_url}"
        low = evaluate_sync(
            _example(), metrics=["faithfulness"], llm=spec, api_key="test", cache=False, progress=False
        )
    assert low.summary().judge_gate, low.summary().judge_health  # the premise: this judge is not reading
    out["low"] = str(write_html_report(low.summary(), folder / "low.html", title="low health"))
    fine = evaluate_sync(_example(), metrics=["faithfulness"], llm="offline", cache=False, progress=False)
    out["offline"] = str(write_html_report(fine.summary(), folder / "offline.html", title="offline"))
    out["spec"] = spec
    return out


@pytest.mark.parametrize("width", [1280, 1920])
def test_a_low_health_judge_gets_a_banner_in_view(context, reports: dict[str, str], width: int) -> None:
    page = Page(context, Path(reports["low"]))
    pg = page.page
    pg.set_viewport_size({"width": width, "height": 900})
    pg.wait_for_timeout(100)
    banner = pg.evaluate(BANNER)
    assert banner is not None and banner["visible"] and banner["role"] == "alert", banner
    spec = reports["spec"]
    assert f"The judge {spec} is not reading its inputs." in banner["text"], banner
    assert "spans found 0/" in banner["text"] and "Check the model name and base URL" in banner["text"]
    assert banner["aboveStats"] and not banner["cut"] and banner["page"] == 0, banner
    assert 0 <= banner["left"] and banner["right"] <= banner["width"], banner
    assert pg.evaluate(HEALTH_STAT) == ["0%"]
    ARTIFACTS.mkdir(exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / f"report-judge-health-{width}.png"))
    page.clean()

    page = Page(context, Path(reports["offline"]))
    page.page.set_viewport_size({"width": width, "height": 900})
    assert page.page.evaluate(BANNER) is None
    assert page.page.evaluate(HEALTH_STAT) == ["100%"]
    page.clean()
