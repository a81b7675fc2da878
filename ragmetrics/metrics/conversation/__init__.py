"""Metrics of a conversation: for now the tool-call metrics, which need no judge.

:class:`~ragmetrics.metrics.conversation.tools.ToolCallAccuracy` and
:class:`~ragmetrics.metrics.conversation.tools.ToolCallF1` compare the calls an agent made with the
calls expected of it (in order, and as multisets). They are not in ``BUILTIN_METRICS`` yet.
"""

from __future__ import annotations

from ragmetrics.metrics.conversation.tools import ToolCallAccuracy, ToolCallF1, json_equal

__all__ = ["ToolCallAccuracy", "ToolCallF1", "json_equal"]
