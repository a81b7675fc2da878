"""Framework adapters: score a running LangChain or LlamaIndex RAG app without rewriting it.

- :mod:`ragmetrics.integrations.langchain`: ``RagMetricsCallbackHandler``, a LangChain callback
  handler (extra ``ragmetrics[langchain]``);
- :mod:`ragmetrics.integrations.llamaindex`: ``RagMetricsEventHandler`` for LlamaIndex's
  instrumentation, and ``as_llamaindex_evaluator`` (extra ``ragmetrics[llamaindex]``);
- :mod:`ragmetrics.integrations.ray`: ``evaluate_ray`` over Ray Data under one cluster-wide
  ``ClusterRateLimit`` (extra ``ragmetrics[ray]``; import it from there).

Both handlers capture question, retrieved contexts and answer per top-level run, score them in the
background through the pipeline, and keep :class:`RunResult` records. Importing this package loads
neither framework; the names below are resolved on first access, and a missing framework raises
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
