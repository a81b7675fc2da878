"""``ragmetrics eval`` as a CI gate: ``--junit-xml``, per-metric ``--fail-under`` and ``--threshold``.

In process, on the bundled example with the offline judge (deterministic, no network).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ragmetrics.cli.app import main

BASE = ["eval", "--example", "--judge", "offline", "--quiet"]


def _means(capsys: pytest.CaptureFixture[str]) -> dict[str, float]:
    assert main([*BASE[:-1], "--json"]) == 0
    return {k: v["mean"] for k, v in json.loads(capsys.readouterr().out)["aggregates"].items()}


def _cases(path: Path) -> dict[str, ET.Element]:
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    return {c.get("name", ""): c for c in suite.findall("testcase")}


def test_junit_xml_has_a_testcase_per_metric_failing_as_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    means = _means(capsys)
    out = tmp_path / "eval.xml"
    assert main([*BASE, "--junit-xml", str(out)]) == 0
    cases = _cases(out)
    assert set(cases) == {"faithfulness", "relevancy", "groundedness"}
    assert all(c.find("failure") is None for c in cases.values())
    props = {p.get("name"): p.get("value") for p in cases["faithfulness"].iter("property")}
    assert float(props["mean"]) == pytest.approx(means["faithfulness"], abs=1e-5)
    assert props["total"] == "12" and props["scored"] == "12"
    # one metric over its floor, one under: exit 1, and exactly that testcase fails
    floor = means["faithfulness"] + 0.01
    code = main([*BASE, "--junit-xml", str(out), "--fail-under", f"faithfulness={floor:.4f},relevancy=0.0"])
    assert code == 1
    assert "below --fail-under: faithfulness" in capsys.readouterr().err
    suite = ET.parse(out).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1" and suite.get("tests") == "3"
    cases = _cases(out)
    failure = cases["faithfulness"].find("failure")
    assert failure is not None and "is below --fail-under" in (failure.get("message") or "")
    assert cases["relevancy"].find("failure") is None and cases["groundedness"].find("failure") is None


def test_per_metric_fail_under_and_threshold(capsys: pytest.CaptureFixture[str]) -> None:
    means = _means(capsys)
    low = min(means.values())
    assert main([*BASE, "--fail-under", f"{low + 0.01:.4f}"]) == 1  # a bare number is for every metric
    assert main([*BASE, "--fail-under", f"{low - 0.01:.4f}"]) == 0
    worst = min(means, key=means.__getitem__)
    # another tool's name works too; the others get the bare number
    flag = f"0.0,{'answer_relevancy' if worst == 'relevancy' else worst}={means[worst] + 0.01:.4f}"
    assert main([*BASE, "--fail-under", flag]) == 1
    capsys.readouterr()
    assert main([*BASE[:-1], "--json", "--threshold", "faithfulness=1.0,relevancy=0.0"]) == 0
    aggregates = json.loads(capsys.readouterr().out)["aggregates"]
    assert aggregates["relevancy"]["pass_rate"] == 1.0  # every score >= 0
    assert aggregates["faithfulness"]["pass_rate"] < 1.0  # only perfect scores pass at 1.0
    assert main([*BASE, "--fail-under", "faithfulnes=0.5"]) == 2
    assert "faithfulnes is not among the metrics run" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # argparse refuses it
        main([*BASE, "--threshold", "faithfulness=2"])
    assert exit_info.value.code == 2


def test_junit_xml_path_is_checked_before_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, "--junit-xml", str(tmp_path / "x.txt")]) == 2
    assert "--junit-xml" in capsys.readouterr().err
