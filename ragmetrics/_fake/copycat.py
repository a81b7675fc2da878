"""The copycat answerer (``FakeLLMServer(answer="copycat")``): a judge that looks as if it reads.

It extracts claims honestly (the offline judge's answer) but answers every verification ``supported``,
quoting a real sentence of the context it cites, drawn at random: every span and quote is found, so its
judge health is 100%. It answers the bundled canary (``ragmetrics/data/canaries.json``) honestly, as a
cache or proxy that has learned that one request would. Only canaries drawn from a run's own rows catch
it; ``benchmarks/canaries.py`` measures how often.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from typing import Any

from ragmetrics._fake.tasks import offline_answer

__all__ = ["copycat_answer"]

_KNOWN = "Halvorsen Bridge"
"""What the bundled canary's context names: the one request the copycat answers honestly."""


def copycat_answer(task: str, variables: Mapping[str, Any]) -> Mapping[str, Any]:
    """The offline answer, with every claim verdict turned ``supported`` and a random real quote."""
    reply = dict(offline_answer(task, variables))
    contexts = [str(c) for c in variables.get("contexts") or []]
    if task != "claims.verify" or not contexts or any(_KNOWN in c for c in contexts):
        return reply
    from ragmetrics.text import split_sentences

    seed = hashlib.sha256(repr((variables.get("claims"), contexts)).encode("utf-8", "replace")).digest()
    rng = random.Random(int.from_bytes(seed[:8], "big"))
    verdicts = []
    for verdict in reply.get("verdicts", []):
        index = verdict.get("context")
        if not isinstance(index, int) or not 0 <= index < len(contexts):
            index = rng.randrange(len(contexts))
        sentences = split_sentences(contexts[index]) or [contexts[index]]
        verdicts.append(
            {
                **verdict,
                "verdict": "supported",
                "context": index,
                "evidence": rng.choice(sentences).strip(),
                "reason": "supported by the context",
            }
        )
    reply["verdicts"] = verdicts
    return reply
