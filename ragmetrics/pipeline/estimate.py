"""Predict the LLM calls, tokens and cost of a run before making it, without calling anything.

For the claim metrics the estimate prices the claim engine's own plan (``ClaimMetric.plan``, the one a
run executes), with prompts rendered exactly as they would be sent: prompt tokens are characters / 4
plus the response schema, completion tokens are guessed from the answer's length. With
``check_cache`` on, requests already in the judge cache are free (and a cached extraction gives the
real claims); requests equal under the cache key are billed once. Cost comes from the judge's price
table; metrics without a judge are assumed to make no LLM calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragmetrics.errors import InvalidInputError
from ragmetrics.judge import JudgeRequest
from ragmetrics.judge.cache import CachingJudge, cache_key
from ragmetrics.judge.pricing import batch_cost_usd, cost_usd
from ragmetrics.metrics.base import needs_of
from ragmetrics.metrics.claims.engine import ClaimPlan
from ragmetrics.metrics.claims.metric import ClaimMetric
from ragmetrics.pipeline._inputs import columns_dataset
from ragmetrics.pipeline._metric_call import share_judges
from ragmetrics.pipeline.canary_draw import DRAW_ROWS, draw_canary
from ragmetrics.pipeline.dataset import Dataset, to_sample
from ragmetrics.sample import Conversation, Sample
from ragmetrics.text import tokens_for_chars as _tokens

__all__ = ["Estimate", "JudgeEstimate", "SampleEstimator", "estimate"]

_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)")
_VERDICT_OVERHEAD_CHARS = 130
"""Characters of one verdict's JSON besides the quote: index, verdict, context, a one-line reason."""
_CLAIM_OVERHEAD_CHARS = 45
"""Characters of one extracted claim's JSON besides its text and span."""
_CONTEXT_OVERHEAD_CHARS = 40
"""Characters of one context's judgement per level asked (supports; relevance and a reason)."""
_WHOLE_OVERHEAD_CHARS = 160
"""Characters of a conversation-level judgement per assistant turn (an item: indices, a verdict, a
reason), besides the quotes (guessed as a quarter of what was said)."""


@cache
def _schema_tokens(model: type[BaseModel]) -> int:
    return _tokens(len(json.dumps(model.model_json_schema(), separators=(",", ":"))))


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


class JudgeEstimate(BaseModel):
    """Predicted usage of one judge."""

    model_config = ConfigDict(extra="forbid")

    judge: str
    """The judge's spec string."""
    calls: int = 0
    """Requests expected to reach the provider."""
    cached_calls: int = 0
    """Requests found in the cache (free)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    batch_cost_usd: float = 0.0
    """The same requests through the provider's batch API (``batch=True`` / ``--batch``)."""
    priced: bool = True
    """False when the model is not in the price table (cost shown as 0)."""


class Estimate(BaseModel):
    """Predicted calls, tokens and cost of running metrics over a dataset."""

    model_config = ConfigDict(extra="forbid")

    samples: int = 0
    """Valid rows counted."""
    invalid_rows: int = 0
    """Rows that would fail validation (they cost nothing)."""
    repeats: int = 1
    calls: int = 0
    """Requests expected to reach a provider."""
    cached_calls: int = 0
    """Requests already in the cache."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    """Predicted cost in USD (0 for cached requests and unpriced models)."""
    batch_cost_usd: float = 0.0
    """Predicted cost in USD of the same run in batch mode (the providers' batch prices)."""
    judges: dict[str, JudgeEstimate] = Field(default_factory=dict)
    """Per judge spec."""
    canary_calls: int = 0
    """Of ``calls``: the known-answer probes put to each judge first (0 when cached or ``canaries=False``)."""
    notes: list[str] = Field(default_factory=list)
    """Assumptions worth knowing (unpriced models, metrics not estimated)."""

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __str__(self) -> str:
        lines = [
            f"{self.samples} samples x {self.repeats} repeat(s): {self.calls} calls "
            f"({self.cached_calls} cached), {self.prompt_tokens} prompt + {self.completion_tokens} "
            f"completion tokens, ${self.cost_usd:.4f} (${self.batch_cost_usd:.4f} with --batch)"
        ]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


@dataclass(slots=True)
class _Cost:
    calls: int = 0
    cached: int = 0
    prompt: int = 0
    completion: int = 0
    cost: float = 0.0
    batch_cost: float = 0.0


@dataclass(slots=True)
class _Group:
    judge: CachingJudge
    members: list[ClaimMetric]
    """The claim metrics on this judge; each plans its own calls, equal requests are made once."""


def _peek(judge: CachingJudge, request: Any) -> Mapping[str, Any] | None:
    """A cached reply for ``request`` if there is one; never calls the judge."""
    return judge.peek(request)


class SampleEstimator:
    """Predicts one sample's usage for a set of metrics (the runner uses it for ``max_cost_usd``).

    Each claim metric's calls come from its own :meth:`~ragmetrics.metrics.claims.metric.ClaimMetric.plan`,
    the plan a run executes; requests equal under the judge's cache key are counted once, as the
    cache and single-flight make them once in a run.

    Args:
        metrics: The metrics; claim metrics on equal judges (``judge_key``) share calls, as in a run.
        repeats: Runs per metric.
        check_cache: Count requests found in the judge cache as cached.
    """

    def __init__(self, metrics: Sequence[Any], *, repeats: int = 1, check_cache: bool = True) -> None:
        self.repeats = repeats
        self.check_cache = check_cache
        groups: dict[int, _Group] = {}
        self.unestimated: list[str] = []
        self.whole: list[Any] = []
        """The conversation-level metrics (one request per conversation each, from ``request()``)."""
        for metric in metrics:
            if isinstance(metric, ClaimMetric):
                judge = metric.judge
                groups.setdefault(id(judge), _Group(judge, [])).members.append(metric)
            elif needs_of(metric).conversation and callable(getattr(metric, "request", None)):
                self.whole.append(metric)
            elif needs_of(metric).judge:
                self.unestimated.append(str(getattr(metric, "name", type(metric).__name__)))
        self.groups = list(groups.values())

    def judges(self) -> list[CachingJudge]:
        """The judges estimated, one per group (and the conversation-level metrics' own)."""
        found = {id(g.judge): g.judge for g in self.groups}
        for metric in self.whole:
            found.setdefault(id(metric.judge), metric.judge)
        return list(found.values())

    def estimate(
        self,
        sample: Sample,
        seen: dict[int, set[str]] | None = None,
        *,
        level: str = "sample",
        conversation: Conversation | None = None,
    ) -> dict[str, _Cost]:
        """Predicted usage of ``sample`` per judge spec.

        Args:
            sample: The sample.
            seen: Cache keys already billed, per judge group, shared across calls: pass the same dict
                for every row of a dataset so a request repeated on another row is billed once, as the
                run's cache and single-flight make it once. None bills ``sample`` on its own.
            level: The row's level (``Row.level``): a ``conversation`` row runs only the
                conversation-level metrics, a ``turn`` none of them.
            conversation: A conversation row's conversation (its one request per such metric).
        """
        out: dict[str, _Cost] = {}
        if level != "conversation":
            for index, group in enumerate(self.groups):
                acc = out.setdefault(group.judge.info.spec, _Cost())
                for repeat in range(self.repeats):
                    shared = seen.setdefault(index, set()) if seen is not None else set()
                    self._sample(group, sample, repeat, acc, shared)
        if conversation is not None:
            for metric in self.whole:
                acc = out.setdefault(metric.judge.info.spec, _Cost())
                shared = seen.setdefault(-1, set()) if seen is not None else set()
                for repeat in range(self.repeats):
                    self._whole(metric, conversation, repeat, acc, shared)
        return out

    def cost(self, sample: Sample, level: str = "sample", conversation: Conversation | None = None) -> float:
        """Predicted cost of ``sample`` (a row of ``level``, with its conversation) in USD."""
        return sum(c.cost for c in self.estimate(sample, level=level, conversation=conversation).values())

    def _whole(
        self, metric: Any, conversation: Conversation, repeat: int, acc: _Cost, seen: set[str]
    ) -> None:
        """Bill a conversation-level metric's one request (none when it needs no call or is refused)."""
        try:
            request = metric.request(conversation, repeat)
        except InvalidInputError:
            return
        if request is None:
            return
        judge = metric.judge
        key = cache_key(judge.inner, request)
        if key in seen:
            return
        seen.add(key)
        if self.check_cache and _peek(judge, request) is not None:
            acc.cached += 1
            return
        said = sum(len(m.content) for m in conversation.messages if m.role != "tool")
        completion = _tokens(_WHOLE_OVERHEAD_CHARS * (len(conversation.turns()) + 1) + said // 4)
        self._bill(judge, acc, _request_tokens(request) + _schema_tokens(request.response_model), completion)

    def _sample(self, group: _Group, sample: Sample, repeat: int, acc: _Cost, seen: set[str]) -> None:
        for metric in group.members:
            for claim_plan in metric.plans(sample, repeat):
                self._plan(group.judge, claim_plan, seen, acc)

    def _plan(self, judge: CachingJudge, claim_plan: ClaimPlan, seen: set[str], acc: _Cost) -> None:
        claims, known = self._extract(judge, claim_plan.extract, claim_plan.text, seen, acc)
        also_claims: list[str] = []
        if claim_plan.also_extract is not None:
            also_claims, also_known = self._extract(
                judge, claim_plan.also_extract, claim_plan.also_text or "", seen, acc
            )
            known = known and also_known
        self._verify(judge, claim_plan, claims, also_claims, known, seen, acc)

    def _extract(
        self,
        judge: CachingJudge,
        request: JudgeRequest[BaseModel] | None,
        text: str,
        seen: set[str],
        acc: _Cost,
    ) -> tuple[list[str], bool]:
        """Bill an extraction once; its claims (from the cache if there, else guessed from sentences)."""
        if request is None:
            return [], True
        entry = _peek(judge, request) if self.check_cache else None
        if entry is not None:
            claims = [c["text"] for c in entry["value"].get("claims", []) if str(c.get("text", "")).strip()]
        else:
            claims = _sentences(text)
        key = cache_key(judge.inner, request)
        if key not in seen:
            seen.add(key)
            if entry is not None:
                acc.cached += 1
            else:
                completion = _tokens(2 * len(text) + _CLAIM_OVERHEAD_CHARS * (len(claims) + 1))
                self._bill(
                    judge, acc, _request_tokens(request) + _schema_tokens(request.response_model), completion
                )
        return claims, entry is not None

    def _verify(
        self,
        judge: CachingJudge,
        claim_plan: ClaimPlan,
        claims: list[str],
        also_claims: list[str],
        known: bool,
        seen: set[str],
        acc: _Cost,
    ) -> None:
        n = len(claims) + len(also_claims)
        claim_chars = sum(len(c) for c in claims) + sum(len(c) for c in also_claims)
        per_context = _CONTEXT_OVERHEAD_CHARS * claim_plan.task.per_context
        for vreq in claim_plan.verify(claims, also_claims):
            vkey = cache_key(judge.inner, vreq)
            if vkey in seen:
                continue
            seen.add(vkey)
            if known and self.check_cache and _peek(judge, vreq) is not None:
                acc.cached += 1
                continue
            contexts = len(vreq.variables.get("contexts") or ())
            completion = _tokens(n * _VERDICT_OVERHEAD_CHARS + claim_chars + contexts * per_context)
            self._bill(judge, acc, _request_tokens(vreq) + _schema_tokens(vreq.response_model), completion)

    @staticmethod
    def _bill(judge: CachingJudge, acc: _Cost, prompt: int, completion: int) -> None:
        acc.calls += 1
        acc.prompt += prompt
        acc.completion += completion
        prices = getattr(judge.inner, "prices", None)
        if prices is not None and not judge.info.heuristic:
            acc.cost += cost_usd(prices, judge.info.provider, judge.info.model, prompt, completion)
            acc.batch_cost += batch_cost_usd(
                prices, judge.info.provider, judge.info.model, prompt, completion
            )


def _request_tokens(request: Any) -> int:
    return _tokens(sum(len(m.content) for m in request.messages))


def _priced(judge: CachingJudge) -> bool:
    if judge.info.heuristic:
        return True
    prices = getattr(judge.inner, "prices", None) or {}
    models = prices.get(judge.info.provider, {})
    return any(judge.info.model.startswith(name) for name in models)


def estimate(
    metrics: Sequence[Any],
    dataset: Any | None = None,
    *,
    questions: Sequence[Any] | None = None,
    answers: Sequence[Any] | None = None,
    contexts: Sequence[Any] | None = None,
    columns: Mapping[str, str] | None = None,
    repeats: int = 1,
    check_cache: bool = True,
    canaries: bool = True,
) -> Estimate:
    """Predict calls, tokens and cost of running ``metrics`` over a dataset, without calling anything.

    Claim metrics that share a judge are counted as the pipeline runs them: a request equal under the
    judge's cache key is billed once across the whole dataset (identical rows cost one set of calls).
    Pass the same metrics you give the pipeline; ``EvaluationPipeline.estimate`` does this.

    Args:
        metrics: The metrics to run.
        dataset: Anything :class:`~ragmetrics.pipeline.dataset.Dataset` reads.
        questions: Column form, as in ``EvaluationPipeline.evaluate``.
        answers: Column form.
        contexts: Column form.
        columns: Field -> column name mapping.
        repeats: Runs per metric.
        check_cache: Count requests already in the judge cache as free.
        canaries: Count the known-answer probes the run puts to each judge first
            (:mod:`ragmetrics.pipeline.canaries`; ``Estimate.canary_calls``); False, as a run with
            ``canaries=False``, leaves them out.

    Raises:
        ConfigError: Bad dataset or columns.
    """
    share_judges(metrics)
    if dataset is None:
        dataset = columns_dataset(questions, answers, contexts, None, None)
    needs_contexts = any(needs_of(m).contexts for m in metrics)
    ds = dataset if isinstance(dataset, Dataset) else Dataset(dataset, columns=columns)
    estimator = SampleEstimator(metrics, repeats=repeats, check_cache=check_cache)
    result = Estimate(repeats=repeats)
    per: dict[str, _Cost] = {}
    seen: dict[int, set[str]] = {}  # billed cache keys per judge group, across the whole dataset
    first: list[Sample] = []  # the rows the run's canary is drawn from
    for row in ds.sample_rows():
        try:
            sample = to_sample(row, require_contexts=needs_contexts)
        except InvalidInputError:
            result.invalid_rows += 1
            continue
        result.samples += 1
        if len(first) < DRAW_ROWS and row.index < 4 * DRAW_ROWS:
            first.append(sample)
        costs = estimator.estimate(sample, seen, level=row.level, conversation=row.session)
        for spec, cost in costs.items():
            acc = per.setdefault(spec, _Cost())
            acc.calls += cost.calls
            acc.cached += cost.cached
            acc.prompt += cost.prompt
            acc.completion += cost.completion
            acc.cost += cost.cost
            acc.batch_cost += cost.batch_cost
    if canaries and result.samples:  # a run puts them before its first valid row: none, no canaries
        result.canary_calls = _canary_costs(estimator, per, draw_canary(first).sample)
    judges = {j.info.spec: j for j in estimator.judges()}
    for spec, acc in per.items():
        priced = _priced(judges[spec])
        result.judges[spec] = JudgeEstimate(
            judge=spec,
            calls=acc.calls,
            cached_calls=acc.cached,
            prompt_tokens=acc.prompt,
            completion_tokens=acc.completion,
            cost_usd=acc.cost,
            batch_cost_usd=acc.batch_cost,
            priced=priced,
        )
        if not priced:
            result.notes.append(
                f"{spec} is not in the price table: its cost is counted as $0, and a run with "
                "max_cost_usd / --max-cost refuses to start (price it with --price-per-mtok IN,OUT, prices= "
                "on the metric or a RAGMETRICS_PRICES file)"
            )
    result.calls = sum(j.calls for j in result.judges.values())
    result.cached_calls = sum(j.cached_calls for j in result.judges.values())
    result.prompt_tokens = sum(j.prompt_tokens for j in result.judges.values())
    result.completion_tokens = sum(j.completion_tokens for j in result.judges.values())
    result.cost_usd = sum(j.cost_usd for j in result.judges.values())
    result.batch_cost_usd = sum(j.batch_cost_usd for j in result.judges.values())
    if estimator.unestimated:
        result.notes.append(
            f"not estimated (no estimate for their judge calls): {', '.join(estimator.unestimated)}"
        )
    if result.canary_calls:
        result.notes.append(
            f"{result.canary_calls} of the calls are the canaries (known-answer probes, once per run and "
            "judge; --no-canaries leaves them out)"
        )
    if result.invalid_rows:
        result.notes.append(f"{result.invalid_rows} invalid rows would fail validation and cost nothing")
    for judge in estimator.judges():
        judge.close_disk()
    return result


def _canary_costs(estimator: SampleEstimator, per: dict[str, _Cost], sample: Sample) -> int:
    """Add the canary sample's requests, once per judge, to ``per``; return their calls."""
    from ragmetrics.metrics.claims.faithfulness import FaithfulnessMetric

    calls = 0
    for judge in estimator.judges():  # every judge the run puts its canaries to
        metric = FaithfulnessMetric(llm="offline", cache=False)
        metric.use_judge(judge)
        acc = per.setdefault(judge.info.spec, _Cost())
        before = acc.calls
        estimator._sample(_Group(judge, [metric]), sample, 0, acc, set())
        calls += acc.calls - before
    return calls
