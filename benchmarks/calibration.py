"""``ragmetrics.calibrate`` for every judge that runs here: agreement with human labels, calls and cost.

Usage::

    python benchmarks/calibration.py [--labels PATH ...] [--metrics faithfulness,relevancy]
        [--judge SPEC ...] [--bootstrap 1000] [--out benchmarks/results/calibration.json]

Judges measured by default: ``offline``, and the loopback ``FakeLLMServer`` in its two modes through
the real openai SDK: ``fake-default`` (answers with the offline heuristic, so it should match
``offline``) and ``fake-schema`` (schema-valid filler: a judge that reads nothing, so it should sit at
chance). ``--judge SPEC`` adds any other judge (``openai:MODEL@http://127.0.0.1:8080/v1`` for a local
llama-cpp-python server). Labels default to the bundled ExpertQA example and ragmetrics' dev sets in
``../shared/data`` when they are there. Every run is cold (``cache=False``).

SmolLM2-135M-Instruct through llama-cpp-python's server (``--smollm2-url URL`` of a running one, else
one started from ``--llama-python PY`` or ``RAGMETRICS_LLAMA_PYTHON``; see ``llama_local.py``)
decodes a few tokens a second on a busy CPU, so it is calibrated on a small balanced subset of the
bundled example (the ``--smollm2-labels`` shortest faithful and unfaithful rows, faithfulness only),
next to the other judges on the same subset; when it cannot run, the JSON records why.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its sibling module

from llama_local import SMOLLM2_OPTIONS, add_smollm2_arguments, smollm2

from ragmetrics.calibration import calibrate_sync, example_path
from ragmetrics.judge import make_judge
from ragmetrics.testing import FakeLLMServer

ROOT = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("RAGMETRICS_SHARED_DATA", ROOT.parent.parent / "shared" / "data"))


def shortest_labels(path: Path, per_class: int) -> list[dict[str, Any]]:
    """The ``per_class`` shortest faithful and unfaithful rows of a label file (answer + contexts)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out: list[dict[str, Any]] = []
    for wanted in (True, False):
        same = [r for r in rows if r.get("label", {}).get("faithful") is wanted]
        same.sort(key=lambda r: len(r["answer"]) + sum(len(c) for c in r["contexts"]))
        out += [{**r, "label": {"faithful": wanted}} for r in same[:per_class]]
    return out


def measure(
    name: str, labels: Any, label_name: str, metrics: list[str], judge: Any, bootstrap: int
) -> dict[str, Any]:
    """Calibrate one judge on one label set; the row of the JSON (and a line on stderr)."""
    started = time.perf_counter()
    report = calibrate_sync(labels, metrics=metrics, judges=[judge], bootstrap=bootstrap, cache=False)
    found = report.judges[0]
    for m, a in found.metrics.items():
        print(
            f"{label_name:32} {name:13} {m:13} n={a.scored:3} auroc={a.auroc} "
            f"ci={a.auroc_ci} bal.acc={a.balanced_accuracy} kappa={a.kappa} "
            f"calls/label={found.calls_per_label:.2f}",
            file=sys.stderr,
        )
    return {
        "labels": label_name,
        "judge": name,
        "seconds": round(time.perf_counter() - started, 2),
        "calls_per_label": found.calls_per_label,
        "cost_per_label_usd": found.cost_per_label_usd,
        "metrics": {m: a.model_dump(mode="json") for m, a in found.metrics.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", action="append", default=[], help="labelled .jsonl (repeatable)")
    parser.add_argument("--metrics", default="faithfulness,relevancy")
    parser.add_argument("--judge", action="append", default=[], help="another judge spec (repeatable)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--out", default=str(ROOT / "results" / "calibration.json"))
    parser.add_argument(
        "--smollm2-labels", type=int, default=3, help="faithful and unfaithful rows each SmolLM2 scores"
    )
    add_smollm2_arguments(parser)
    args = parser.parse_args(argv)
    labels = args.labels or [str(example_path())]
    if not args.labels:
        dev = [SHARED / "faithfulness_dev.jsonl", SHARED / "relevancy_dev.jsonl"]
        labels += [str(p) for p in dev if p.exists()]
        for missing in (p for p in dev if not p.exists()):  # said, so a table is not read as covering it
            print(f"not measured: {missing} is missing (set RAGMETRICS_SHARED_DATA)", file=sys.stderr)
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-fake")
    runs = []
    with FakeLLMServer() as default, FakeLLMServer(answer="schema") as schema:
        judges = {
            "offline": "offline",
            "fake-default": f"openai:gpt-4o-mini@{default.openai_base_url}",
            "fake-schema": f"openai:gpt-4o-mini@{schema.openai_base_url}",
            **{spec: spec for spec in args.judge},
        }
        for path in labels:
            metrics = [m for m in args.metrics.split(",") if m]
            if path.endswith("faithfulness_dev.jsonl"):
                metrics = ["faithfulness"]
            elif path.endswith("relevancy_dev.jsonl"):
                metrics = ["relevancy"]
            for name, spec in judges.items():
                runs.append(measure(name, path, Path(path).name, metrics, spec, args.bootstrap))
        with tempfile.TemporaryDirectory() as tmp, smollm2(args, Path(tmp) / "server.log") as (url, info):
            if url is not None:
                subset = shortest_labels(example_path(), args.smollm2_labels)
                label_name = f"{example_path().name} ({args.smollm2_labels}+{args.smollm2_labels} shortest)"
                small = {k: judges[k] for k in ("offline", "fake-default", "fake-schema")}
                small["SmolLM2-135M"] = make_judge(f"openai:smollm2@{url}", **SMOLLM2_OPTIONS)
                for name, spec in small.items():
                    runs.append(measure(name, subset, label_name, ["faithfulness"], spec, args.bootstrap))
            else:
                print(f"SmolLM2 not run: {info['skipped']}", file=sys.stderr)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"bootstrap": args.bootstrap, "runs": runs, "smollm2": {**info, "options": SMOLLM2_OPTIONS}}
    out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
