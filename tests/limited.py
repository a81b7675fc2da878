"""A fresh interpreter under an address-space limit and a wall-clock timeout, for the cap tests.

A cap that does not hold fails the test (the timeout, or a MemoryError under the limit) instead of
stalling or exhausting the shared machine. The child imports this checkout's ragmetrics (``ROOT`` first
on ``PYTHONPATH``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The child's own peak resident memory in MiB, as an expression for its code. Not ru_maxrss: Linux keeps
# across exec the peak of the process that forked the child (a pytest worker of 1 GB read as 1,044 MB in CI)
PEAK_MB = "int(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:'))) // 1024"


def run_limited(
    argv: Sequence[str],
    *,
    memory: int,
    timeout: float,
    env: Mapping[str, str] | None = None,
    what: str = "the probe",
) -> subprocess.CompletedProcess[str]:
    """``python ARGV`` in ``ROOT`` with at most ``memory`` bytes of address space and ``timeout`` seconds.

    Args:
        argv: The interpreter's arguments (``["-c", code]``, ``["-m", "ragmetrics.cli", ...]``).
        memory: The child's address-space limit in bytes (``RLIMIT_AS``).
        timeout: Seconds before the test fails, naming ``what`` did not finish.
        env: Variables set in the child beside the environment's own.
        what: What the child does, for the failure message.
    """

    def limit() -> None:  # runs in the child before exec: only sets a resource limit
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    try:
        return subprocess.run(
            [sys.executable, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYTHONPATH": path, **(env or {})},
            cwd=ROOT,
            preexec_fn=limit,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{what} did not finish within {timeout:g} s: a cap did not hold ({exc.stdout!r:.300})")
