"""Progress: tqdm's bar on a terminal, steady lines in a log, a redrawn line in a notebook (issues 14, 40)."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios

from ragmetrics.pipeline.progress import ProgressBar


def test_a_log_gets_plain_lines_at_a_steady_interval_and_a_last_one() -> None:
    out = io.StringIO()
    bar = ProgressBar(100, stream=out, log_interval_s=0.0)
    assert bar.enabled and bar.style == "lines"
    for done in (10, 20, 30):
        bar.update(done)
    bar.close()
    text = out.getvalue()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert [line.split()[0] for line in lines] == ["10/100", "20/100", "30/100"]


def test_a_quick_run_in_a_log_prints_only_its_last_line() -> None:
    out = io.StringIO()
    bar = ProgressBar(5, stream=out)  # 10 s between lines: none falls inside this run
    for done in range(1, 6):
        bar.update(done)
    bar.close()
    (line,) = out.getvalue().splitlines()
    assert line.startswith("5/5 |") and "100%" in line


def test_disabled_prints_nothing() -> None:
    out = io.StringIO()
    bar = ProgressBar(5, enabled=False, stream=out, log_interval_s=0.0)
    bar.update(3)
    bar.close()
    assert out.getvalue() == ""


def test_eval_with_stderr_piped_shows_progress_in_the_log() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    proc = subprocess.run(
        [sys.executable, "-m", "ragmetrics.cli", "eval", "--example"],
        capture_output=True,  # bytes, so that a carriage return is seen as one
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    progress = [line for line in proc.stderr.split(b"\n") if line.startswith(b"12/12 |")]
    assert len(progress) == 1 and b"\r" not in proc.stderr and b"\x1b" not in proc.stderr


NOTEBOOK = """
import sys, types
shell = types.SimpleNamespace(kernel=object())
sys.modules["IPython"] = types.SimpleNamespace(get_ipython=lambda: shell)
from ragmetrics.pipeline.progress import ProgressBar
bar = ProgressBar(4, min_interval_s=0)
print(bar.style)
for done in range(1, 5):
    bar.update(done)
bar.close()
"""


def test_a_jupyter_kernel_gets_a_line_redrawn_with_carriage_returns_only() -> None:
    proc = subprocess.run([sys.executable, "-c", NOTEBOOK], capture_output=True, timeout=60)  # bytes: keep \r
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == b"notebook"
    assert proc.stderr.count(b"\r") >= 4 and b"\x1b" not in proc.stderr
    assert proc.stderr.endswith(b"\n") and proc.stderr.count(b"\n") == 1 and b"4/4 |" in proc.stderr


STALL = """
import os
from ragmetrics import EvaluationPipeline, RelevancyMetric
from ragmetrics.testing import FakeLLMServer
os.environ["OPENAI_API_KEY"] = "sk-test"
with FakeLLMServer() as srv:
    srv.latency = 12.0  # one call that takes longer than the 10 s between log lines
    metric = RelevancyMetric(llm=f"openai:gpt-4o-mini@{srv.openai_base_url}", cache=False)
    EvaluationPipeline(metrics=[metric], progress=True).run(
        [{"question": "What is the capital of France?", "answer": "Paris is the capital of France."}]
    )
"""


def test_a_log_gets_its_steady_line_while_every_sample_is_stalled() -> None:
    proc = subprocess.run([sys.executable, "-c", STALL], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.split(b"\n") if b"|" in line]
    assert lines[0].startswith(b"0/1 |"), proc.stderr  # printed during the stall, before any record
    assert lines[-1].startswith(b"1/1 |") and b"\r" not in proc.stderr


TERMINAL = """
import os
from ragmetrics import EvaluationPipeline, RelevancyMetric
from ragmetrics.testing import FakeLLMServer
os.environ["OPENAI_API_KEY"] = "sk-test"
with FakeLLMServer() as srv:
    metric = RelevancyMetric(llm=f"openai:gpt-4o-mini@{srv.openai_base_url}", cache=False)
    rows = [{"question": f"What is the capital of France? ({i})", "answer": "Paris."} for i in range(3)]
    EvaluationPipeline(metrics=[metric]).run(rows)
"""


def test_a_terminal_gets_tqdms_bar_redrawn_in_place_with_our_calls_and_dollars() -> None:
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 24 rows, 100 columns
    proc = subprocess.Popen(
        [sys.executable, "-c", TERMINAL], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower
    )
    os.close(follower)
    out = b""
    try:
        while chunk := os.read(leader, 4096):
            out += chunk
    except OSError:  # EIO: the child closed its end of the terminal
        pass
    finally:
        os.close(leader)
    assert proc.wait(timeout=120) == 0, out
    last = out.replace(b"\r\n", b"\n").split(b"\r")[-1].decode()  # the bar as it was left
    assert out.count(b"\r") >= 2 and "\u2588" in last  # redrawn in place; tqdm's full block
    assert last.startswith("3/3 |") and "100%" in last and "/s" in last, last
    # ours, as tqdm's postfix
    figures = re.search(r", ([0-9]+) calls, 0 cached, \$0\.[0-9]{4}$", last.strip())
    assert figures and int(figures[1]) >= 3, last  # a call a row, and the canaries'
    assert "$0.0000" not in last, last


def test_import_ragmetrics_leaves_tqdm_until_a_bar_starts() -> None:
    code = (
        "import sys, ragmetrics; from ragmetrics import EvaluationPipeline; "
        "from ragmetrics.pipeline.progress import ProgressBar; print('tqdm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_bar_starts_no_thread_and_leaves_the_multiprocessing_start_method_free() -> None:
    # tqdm's defaults: a monitor thread, and a multiprocessing lock that fixes the start method for good
    code = NOTEBOOK + (
        "import multiprocessing, threading\n"
        "print(threading.active_count())\n"
        "multiprocessing.set_start_method('spawn')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["notebook", "1"] and "4/4 |" in proc.stderr
