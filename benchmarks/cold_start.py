"""Offline cold start: how long the first record of ``ragmetrics eval --judge offline`` takes.

Run: ``python benchmarks/cold_start.py [--site-packages DIR] [--runs N]``. Each run is a fresh Python
process (memory-limited) that imports ragmetrics and scores the first record of the bundled example
with faithfulness, relevancy and groundedness on the offline judge, through the pipeline that
``ragmetrics eval`` uses; it reports the time to that first record (imports included) and whether
scikit-learn, scipy or pandas got imported. ``--site-packages`` puts a folder with a data-science stack
(e.g. ``pip install --target DIR scikit-learn``) on the path, as in most notebook environments, where
``import nltk`` imports all three. For comparison it also times ``from nltk.stem.porter import
PorterStemmer`` (what the offline judge used to run on its first claim) in the same environment.
Writes ``benchmarks/results/cold_start.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
MEMORY_LIMIT = 3 * 1024**3

FIRST_RECORD = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    from ragmetrics import FaithfulnessMetric, GroundednessMetric, RelevancyMetric
    from ragmetrics.pipeline import EvaluationPipeline
    from importlib.resources import files
    t_import = time.perf_counter()
    row = json.loads(files("ragmetrics").joinpath("data/example.jsonl").read_text().splitlines()[0])
    kinds = (FaithfulnessMetric, RelevancyMetric, GroundednessMetric)
    metrics = [cls(llm="offline", cache=False) for cls in kinds]
    [record] = EvaluationPipeline(metrics=metrics, progress=False).run([row])
    t1 = time.perf_counter()
    heavy = sorted(m for m in ("sklearn", "scipy", "pandas", "nltk") if m in sys.modules)
    out = {"first_record_s": t1 - t0, "import_s": t_import - t0, "scoring_s": t1 - t_import}
    print(json.dumps({**out, "heavy_modules": heavy, "scores": record.scores}))
""")

NLTK_IMPORT = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    from nltk.stem.porter import PorterStemmer
    PorterStemmer().stem("running")
    t1 = time.perf_counter()
    heavy = sorted(m for m in ("sklearn", "scipy", "pandas") if m in sys.modules)
    print(json.dumps({"import_s": t1 - t0, "heavy_modules": heavy}))
""")


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run(code: str, site: Path | None) -> dict:
    env = dict(os.environ)
    paths = [str(Path(__file__).resolve().parent.parent)]
    if site is not None:
        paths.append(str(site))
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, preexec_fn=_limit
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site-packages", type=Path, default=None, help="extra folder with scikit-learn")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS / "cold_start.json")
    args = parser.parse_args()
    first = [run(FIRST_RECORD, args.site_packages) for _ in range(args.runs)]
    nltk = [run(NLTK_IMPORT, args.site_packages) for _ in range(args.runs)]
    result = {
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "runs": args.runs,
        "site_packages": str(args.site_packages) if args.site_packages else None,
        "first_record_s_median": round(statistics.median(r["first_record_s"] for r in first), 3),
        "first_record_s_all": [round(r["first_record_s"], 3) for r in first],
        "of_which_imports_s_median": round(statistics.median(r["import_s"] for r in first), 3),
        "of_which_scoring_s_median": round(statistics.median(r["scoring_s"] for r in first), 3),
        "heavy_modules_after_first_record": first[0]["heavy_modules"],
        "scores": first[0]["scores"],
        "nltk_porter_import_s_median": round(statistics.median(r["import_s"] for r in nltk), 3),
        "heavy_modules_after_nltk_import": nltk[0]["heavy_modules"],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
