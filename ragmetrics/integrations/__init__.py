"""Framework adapters: score a running LangChain or LlamaIndex RAG app without rewriting it.

:mod:`ragmetrics.integrations.langchain` (``RagMetricsCallbackHandler``, extra ``langchain``),
:mod:`ragmetrics.integrations.llamaindex` (``RagMetricsEventHandler``, ``as_llamaindex_evaluator``,
extra ``llamaindex``) and :mod:`ragmetrics.integrations.ray` (``evaluate_ray``, extra ``ray``; import
it from there). The handlers score each top-level run in the background through the pipeline and keep
:class:`RunResult` records. Importing this package loads no framework; a missing one raises
:class:`~ragmetrics.errors.MissingDependencyError` naming the extra when an adapter is built.
"""

from __future__ import annotations

from typing import Any

from ragmetrics.integrations._scoring import RunResult

__all__ = ["RagMetricsCallbackHandler", "RagMetricsEventHandler", "RunResult", "as_llamaindex_evaluator"]

_LAZY = {
    "RagMetricsCallbackHandler": "ragmetrics.integrations.langchain",
    "RagMetricsEventHandler": "ragmetrics.integrations.llamaindex",
    "as_llamaindex_evaluator": "ragmetrics.integrations.llamaindex",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ragmetrics.integrations' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
