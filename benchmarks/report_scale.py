"""How the HTML report scales: file size and time to write it, open it and make it ready, for 10,000 samples.

    python benchmarks/report_scale.py [--samples 10000]

Builds synthetic records (three contexts of ~600 characters, three claims and three metrics each),
writes the report, and, when playwright and a Chromium are installed, opens it headless and reads the
page's own render clock. Writes benchmarks/results/report_scale.json and prints a markdown row.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the synthetic-record builder lives with the report tests

from ragmetrics.pipeline import Report  # noqa: E402
from ragmetrics.report import write_html_report  # noqa: E402
from tests.report.builders import synthetic_records  # noqa: E402

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def open_in_browser(path: Path) -> dict | None:
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if executable is None:
        return None
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            profile,
            executable_path=executable,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1440, "height": 1000},
        )
        page = ctx.new_page()
        started = time.perf_counter()
        page.goto(path.resolve().as_uri(), wait_until="load")
        page.wait_for_selector("html[data-ready]", timeout=120_000)
        open_s = time.perf_counter() - started
        script_ms = page.evaluate("window.__rmRenderMs")
        rows = page.locator("#samples-table tbody tr.row").count()
        ctx.close()
    return {"open_to_ready_s": round(open_s, 2), "page_script_ms": round(script_ms, 1), "rows_in_dom": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    args = parser.parse_args()
    report = Report.from_records(synthetic_records(args.samples))
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        path = write_html_report(report, Path(tmp) / "report.html")
        write_s = time.perf_counter() - started
        size = path.stat().st_size
        browser = open_in_browser(path)
    result = {
        "samples": args.samples,
        "bytes": size,
        "mb": round(size / 2**20, 1),
        "write_s": round(write_s, 2),
        "browser": browser,
    }
    out = HERE / "results" / "report_scale.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    ready = f"{browser['open_to_ready_s']} s" if browser else "not measured (no Chromium/playwright)"
    print(f"| {args.samples} | {result['mb']} MB | {write_s:.1f} s | {ready} |")


if __name__ == "__main__":
    main()
