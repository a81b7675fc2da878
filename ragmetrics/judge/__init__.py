"""LLM access: the Judge protocol, resolving ``llm`` into a judge, provider adapters and the cache.

:func:`resolve_judge` (in ``resolve``, the one place an ``llm`` argument is classified) turns a spec
string (``openai:gpt-4o-mini``, ``openai:MODEL@http://localhost:11434/v1``, ``offline``...), a provider
SDK client, a LangChain / LlamaIndex model or a Judge into a caching judge. Provider SDKs are imported
only when a provider judge makes its first call.

Modules: ``base`` (the Judge protocol), ``resolve``, ``cache`` over ``store`` (memo and disk folder),
``schema``, ``retry``, ``limits``, ``breaker``, ``metering`` and ``pricing`` (what every network call
goes through), ``providers/`` (the SDK and framework adapters) and ``offline/`` (the heuristic judge).
"""

from __future__ import annotations

from ragmetrics.judge.base import Judge, JudgeReply, JudgeRequest, Message
from ragmetrics.judge.cache import CachingJudge
from ragmetrics.judge.resolve import OFFLINE_DEFAULT_MESSAGE as OFFLINE_DEFAULT_MESSAGE
from ragmetrics.judge.resolve import make_judge, resolve_judge

__all__ = ["CachingJudge", "Judge", "JudgeReply", "JudgeRequest", "Message", "make_judge", "resolve_judge"]
