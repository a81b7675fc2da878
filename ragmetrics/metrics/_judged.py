"""What every judged metric shares: checking the judge argument, resolving it lazily, and sharing it.

The RAG metrics and the model-graded evaluators hold a judge the same way; the pipeline relies on
``judge_key()`` and ``use_judge()`` to give metrics that name the same judge one caching judge.
"""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from ragmetrics.errors import ConfigError
from ragmetrics.judge import CachingJudge, Judge, resolve_judge

__all__ = ["JudgeHolder"]

_T = TypeVar("_T")


class JudgeHolder:
    """Holds a judge spec or object and resolves it into a caching judge on first use."""

    def _init_judge(
        self, owner: str, llm: str | Judge | None, cache: bool | str | Path, judge_options: dict[str, Any]
    ) -> None:
        """Check and store the judge settings.

        Raises:
            ConfigError: ``llm`` is neither a spec string, a Judge nor None; a malformed spec; an unknown
                or invalid judge option.
        """
        if llm is not None and not isinstance(llm, (str, Judge)):
            raise ConfigError(
                f"{owner}: llm must be a judge spec string or a Judge, got {type(llm).__name__}"
            )
        from ragmetrics.settings import check_judge_options, parse_judge_spec

        check_judge_options(judge_options, owner=owner, extra=("prices",))
        if llm is None or isinstance(llm, str):  # the default judge is named later: check the values now
            parse_judge_spec(llm or "offline", **{k: v for k, v in judge_options.items() if k != "prices"})
        self._llm = llm
        self._cache = cache
        self._judge_options = judge_options
        self._judge: CachingJudge | None = None

    @property
    def judge(self) -> CachingJudge:
        """The caching judge, resolved on first use (which is when a missing API key is reported)."""
        if self._judge is None:
            self._judge = resolve_judge(self._llm, cache=self._cache, **self._judge_options)
        return self._judge

    def judge_key(self) -> tuple[object, ...]:
        """What identifies this metric's judge: metrics with equal keys can share one judge object."""
        llm = self._llm if self._llm is None or isinstance(self._llm, str) else id(self._llm)
        cache = str(self._cache) if not isinstance(self._cache, bool) else self._cache
        return (llm, cache, tuple(sorted((k, repr(v)) for k, v in self._judge_options.items())))

    async def _closing(self, coro: Awaitable[_T]) -> _T:
        """Await ``coro``, then close the judge (the ``*_sync`` twins end their event loop after this)."""
        try:
            return await coro
        finally:
            if self._judge is not None:
                await self._judge.aclose()  # its HTTP clients and disk cache (both reopen on next use)

    def use_judge(self, judge: CachingJudge) -> None:
        """Share ``judge`` with other metrics (the pipeline does this, so claims are extracted once)."""
        self._judge = judge

    def _judge_spec(self) -> str | None:
        if isinstance(self._llm, str):
            return self._llm
        return getattr(getattr(self._llm, "info", None), "spec", None)
