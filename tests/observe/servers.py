"""Starting a third-party server (MLflow, Phoenix) as a child process on loopback, for the trace tests."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(
    name: str, argv: Sequence[str], root: Path, env: Mapping[str, str], health_url: str, timeout_s: float
) -> tuple[subprocess.Popen[bytes], float]:
    """Run ``argv`` in ``root`` (output in ``root/server.log``) until ``health_url`` answers 200.

    Returns the process and the seconds it took; raises RuntimeError with the log's tail if the server
    exits or does not answer within ``timeout_s``.
    """
    started = time.perf_counter()
    with open(root / "server.log", "wb") as log:  # the child keeps its own handle
        process = subprocess.Popen(list(argv), stdout=log, stderr=subprocess.STDOUT, cwd=root, env=dict(env))
    while time.perf_counter() - started < timeout_s:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(health_url, timeout=2) as reply:
                if reply.status == 200:
                    return process, time.perf_counter() - started
        except OSError:
            time.sleep(0.25)
    process.kill()
    process.wait()
    raise RuntimeError(f"{name} did not start: {(root / 'server.log').read_text(errors='replace')[-3000:]}")
