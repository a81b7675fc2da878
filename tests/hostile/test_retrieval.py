"""Hostile inputs for the offline context-relevance heuristic (issue 13): huge questions and contexts.

The probe runs in a subprocess under RLIMIT_AS, so a regression fails the test instead of taking the
machine down. Time bounds are generous: the machine is shared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 2 * 1024**3  # bytes of address space for the probe process


def _limit_memory() -> None:  # runs in the child, before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def test_huge_question_against_a_context_of_many_sentences_stays_linear_under_a_memory_limit():
    # 17,576 distinct question words against 40,000 sentences: a per-window walk over every question
    # word would be 7e8 steps; walking the smaller side keeps it linear
    probe = """
        import json, time
        from ragmetrics.judge.offline.retrieval import context_relevance
        letters = "abcdefghijklmnopqrstuvwxyz"
        words = [f"q{letters[i // 676]}{letters[i // 26 % 26]}{letters[i % 26]}z" for i in range(17576)]
        question = " ".join(words) + " France"
        context = "France is here. " * 40000 + "word " * 200000
        started = time.perf_counter()
        relevant, score, reason = context_relevance(question, context)
        print(json.dumps([relevant, score, len(reason), time.perf_counter() - started]))
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(probe)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        preexec_fn=_limit_memory,  # only sets a resource limit: safe before exec
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    relevant, score, reason_len, seconds = json.loads(done.stdout)
    assert relevant is False and 0.0 < score < 0.01, "one name of 17,577 question words is found"
    assert reason_len < 400, "the reason names at most six words of each list"
    assert seconds < 20, f"took {seconds:.1f} s"
