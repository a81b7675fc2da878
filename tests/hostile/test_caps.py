"""Size caps of the quadratic evaluators (levenshtein, rouge): long inputs are refused, never a hang.

The probes run in a subprocess under an address-space limit and a wall-clock timeout, so a regression
(an uncapped O(n*m) comparison) fails the test instead of stalling the machine. Time bounds are
generous: the machine is shared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ragmetrics import ConfigError, make_evaluator
from ragmetrics.metrics.evaluators.overlap import ROUGE_MAX_CHARS, rouge_l
from ragmetrics.metrics.evaluators.text import LEVENSHTEIN_MAX_CHARS, levenshtein_similarity

ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 2 * 1024**3  # bytes of address space for the probe process
PROBE_TIMEOUT_S = 60.0  # the uncapped comparisons below take many minutes


def _limit_memory() -> None:  # runs in the child, before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _probe(code: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            env=env,
            preexec_fn=_limit_memory,  # only sets a resource limit: safe before exec
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the probe did not finish within {PROBE_TIMEOUT_S} s: the size cap does not hold")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


_PROBE = """
    import json, random, time
    from ragmetrics import make_evaluator

    random.seed(7)
    cjk = [chr(c) for c in range(0x4E00, 0x4E00 + 20000)]
    big_a = "".join(random.choices(cjk, k=1_000_000))
    big_b = "".join(random.choices(cjk, k=1_000_000))
    words_a = " ".join(random.choices(["ab", "cd", "ef", "gh", "x1", "y2"], k=2_000_000))
    words_b = " ".join(random.choices(["ab", "cd", "ef", "gh", "x1", "y2"], k=2_000_000))
    cases = {
        "levenshtein": ("levenshtein", big_a, big_b),
        "levenshtein_reference": ("levenshtein", "short", big_b),
        "rouge": ("rouge", words_a, words_b),
        "rouge_reference": ("rouge", "ab cd", words_b),
        # lower() turns U+0130 into two characters, one of them a token: more tokens than max_chars/2
        "rouge_tokens": ("rouge", "\\u0130" * 150_000, "\\u0130" * 150_000),
    }
    out = {}
    for key, (kind, output, expected) in cases.items():
        start = time.perf_counter()
        r = make_evaluator(kind).evaluate_sync(output, expected)
        out[key] = {"status": r.status, "message": r.message or "", "s": time.perf_counter() - start}
    print(json.dumps(out))
"""


def test_long_inputs_to_levenshtein_and_rouge_are_invalid_input_not_a_hang():
    out = _probe(_PROBE)
    for key, field in [
        ("levenshtein", "output"),
        ("levenshtein_reference", "expected value"),
        ("rouge", "output"),
        ("rouge_reference", "expected value"),
        ("rouge_tokens", "output"),
    ]:
        case = out[key]
        assert isinstance(case, dict)
        assert case["status"] == "invalid_input", (key, case)
        message = str(case["message"])
        assert f"the {field} is" in message and "max_chars" in message, (key, message)
        assert case["s"] < 5.0, (key, case)
    assert "1,000,000 characters" in str(out["levenshtein"]["message"])  # type: ignore[index]
    assert f"{LEVENSHTEIN_MAX_CHARS:,}" in str(out["levenshtein"]["message"])  # type: ignore[index]
    assert f"{ROUGE_MAX_CHARS:,}" in str(out["rouge"]["message"])  # type: ignore[index]
    assert "tokens" in str(out["rouge_tokens"]["message"])  # type: ignore[index]


def test_inputs_at_the_cap_are_still_scored_exactly():
    a = "kitten sitting " * (LEVENSHTEIN_MAX_CHARS // 15)
    b = "sitting kitten " * (LEVENSHTEIN_MAX_CHARS // 15)
    lev = make_evaluator("levenshtein").evaluate_sync(a, b)
    assert lev.status == "ok"
    assert lev.score == levenshtein_similarity(a, b)
    ra = "the cat sat " * (ROUGE_MAX_CHARS // 12)
    rb = "the cat ran " * (ROUGE_MAX_CHARS // 12)
    rouge = make_evaluator("rouge").evaluate_sync(ra, rb)
    assert rouge.status == "ok"
    assert rouge.score == rouge_l(ra, rb)


def test_max_chars_raises_or_lowers_the_cap_and_is_checked():
    text = "abcdef " * 20
    low = make_evaluator("levenshtein", max_chars=50).evaluate_sync(text, text)
    assert low.status == "invalid_input" and "140 characters" in (low.message or "")
    assert make_evaluator("levenshtein", max_chars=500).evaluate_sync(text, text).score == 1.0
    assert make_evaluator("rouge", max_chars=50).evaluate_sync(text, text).status == "invalid_input"
    assert make_evaluator("rouge", max_chars=500).evaluate_sync(text, text).score == 1.0
    for kind in ("levenshtein", "rouge"):
        with pytest.raises(ConfigError, match="max_chars"):
            make_evaluator(kind, max_chars=0)
