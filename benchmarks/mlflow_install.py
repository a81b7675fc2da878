"""What the ``mlflow`` extra costs a test run: install time and a tracking server's start time.

Run: ``python benchmarks/mlflow_install.py --venv DIR [--install] [--runs N]``. With ``--install`` it
times ``DIR/bin/pip install -q mlflow`` into that virtual environment (an environment that already has
the project's test extra, so only what mlflow adds is downloaded and installed); otherwise pass the
seconds measured by hand with ``--install-s``. Then it starts ``mlflow server`` (SQLite store, artifacts
served over HTTP, one worker, on loopback) ``--runs`` times, timing each from launch to the first 200
from ``/health``. Writes ``benchmarks/results/mlflow_install.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_start_s(venv: Path, timeout_s: float = 300.0) -> float:
    """Seconds from launching ``mlflow server`` to its first 200 from ``/health``."""
    with tempfile.TemporaryDirectory(prefix="mlflow-bench-") as tmp:
        root = Path(tmp)
        port = _free_port()
        started = time.perf_counter()
        process = subprocess.Popen(
            [str(venv / "bin" / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port)]
            + ["--workers", "1", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}"]
            + ["--serve-artifacts", "--artifacts-destination", str(root / "artifacts")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=root,
        )
        try:
            while time.perf_counter() - started < timeout_s:
                if process.poll() is not None:
                    raise RuntimeError("mlflow server exited")
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as reply:
                        if reply.status == 200:
                            return time.perf_counter() - started
                except OSError:
                    time.sleep(0.1)
            raise RuntimeError("mlflow server did not answer /health")
        finally:
            process.terminate()
            process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--venv", type=Path, required=True)
    parser.add_argument("--install", action="store_true", help="time pip install mlflow into --venv")
    parser.add_argument("--install-s", type=float, help="install seconds measured by hand")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    install_s = args.install_s
    if args.install:
        started = time.perf_counter()
        subprocess.run([str(args.venv / "bin" / "pip"), "install", "-q", "mlflow"], check=True)
        install_s = time.perf_counter() - started
    version = subprocess.run(
        [str(args.venv / "bin" / "python"), "-c", "import mlflow; print(mlflow.__version__)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    starts = [server_start_s(args.venv) for _ in range(args.runs)]
    result = {
        "mlflow_version": version,
        "pip_install_mlflow_s": round(install_s, 1) if install_s is not None else None,
        "server_start_s": [round(s, 2) for s in starts],
        "server_start_median_s": round(statistics.median(starts), 2),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "note": "install into a venv that already had .[test,langchain,llamaindex,pandas]; 2 shared cores",
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "mlflow_install.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
