"""What the framework handlers capture and record: :class:`Capture` in, :class:`RunResult` out, and sinks.

A handler turns each finished top-level run of the app into a :class:`Capture`; the background scorer
(:mod:`ragmetrics.integrations._scoring`) scores it and hands the :class:`RunResult` to the optional
sink (a JSONL file or a callable, checked here when the handler is built).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragmetrics.errors import ConfigError, shorten
from ragmetrics.pipeline import ErrorRecord, EvaluationResult

__all__ = [
    "Capture",
    "References",
    "RunResult",
    "Sink",
    "Source",
    "check_references",
    "check_sink",
    "json_safe",
]

Source = Literal["langchain", "llamaindex"]
Sink = Callable[["RunResult"], Any]
References = Mapping[str, str] | Callable[[str], "str | None"] | None
"""Reference answers by question: a mapping, or a function ``question -> reference or None``."""


class RunResult(BaseModel):
    """What a framework handler recorded for one top-level run of the app: the triple and its scores."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    """The framework's id of the top-level run (LangChain run id, LlamaIndex query span); the sample id."""
    source: Source
    """The adapter that captured the run."""
    status: Literal["ok", "failed", "skipped"]
    """``ok``: every metric scored. ``failed``: scoring ran but some metric has no score, or scoring
    itself raised (``errors`` say why). ``skipped``: not scored (``reason`` says why)."""
    reason: str | None = None
    """Why the run was skipped, or a summary of what failed; None when ``ok``."""
    question: str | None = None
    """The captured question (None when the run's input held none)."""
    answer: str | None = None
    """The captured final answer (None when none was found)."""
    contexts: list[str] = Field(default_factory=list)
    """The text of every document the run retrieved, in retrieval order."""
    reference: str | None = None
    """The reference answer given for the run (run metadata ``reference``, or the handler's
    ``references``); None when none was given."""
    scores: dict[str, float | None] = Field(default_factory=dict)
    """Score per metric (None where a metric has none); empty when skipped."""
    evaluation: EvaluationResult | None = None
    """The pipeline's full record (claims, verdicts, reasons, usage); None when skipped or scoring raised."""
    errors: list[ErrorRecord] = Field(default_factory=list)
    """Why some metric has no score, or what raised while scoring or writing to the sink."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """What the framework told about the run: name, tags, metadata, how many retrievals."""
    captured_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    """When the run finished (UTC)."""


@dataclass(slots=True, kw_only=True)
class Capture:
    """One finished top-level run as a handler saw it (internal)."""

    run_id: str
    source: Source
    question: str | None = None
    answer: str | None = None
    contexts: list[str] = field(default_factory=list)
    reference: Any = None
    """The reference the run itself carried (LangChain run metadata); checked when it is scored."""
    skip_reason: str | None = None
    """Set when the run must not be scored (no retrieval, no answer, the run raised)."""
    meta: dict[str, Any] = field(default_factory=dict)

    def result(self, status: Literal["ok", "failed", "skipped"], **fields: Any) -> RunResult:
        """A record of this capture."""
        return RunResult(
            run_id=self.run_id,
            source=self.source,
            status=status,
            question=self.question,
            answer=self.answer,
            contexts=list(self.contexts),
            reference=self.reference if isinstance(self.reference, str) else None,
            meta=self.meta,
            **fields,
        )


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` reduced to JSON types (str, number, bool, None, lists, str-keyed dicts); others as text."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if depth > 4:
        return shorten(value, 200)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v, depth + 1) for v in value]
    return shorten(value, 200)


class _JsonlSink:
    """Appends each record as one JSON line; safe to call from several threads."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def __call__(self, result: RunResult) -> None:
        line = result.model_dump_json() + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)


def check_references(references: object) -> Callable[[str], object] | None:
    """The lookup ``question -> reference`` a handler's ``references`` gives (None for no references).

    Raises:
        ConfigError: ``references`` is neither a mapping nor a callable (a bare string, say).
    """
    if references is None:
        return None
    if isinstance(references, Mapping):
        table = dict(references)
        return table.get
    if callable(references) and not isinstance(references, (str, bytes)):
        return references
    raise ConfigError(
        "references must be a mapping question -> reference answer or a function of the question, "
        f"got {type(references).__name__}"
    )


def check_sink(sink: object) -> Sink | None:
    """The sink to call with each record: a callable as given, a JSONL writer for a path, or None.

    Raises:
        ConfigError: A folder, a path in a folder that does not exist, or neither a path nor a callable.
    """
    if sink is None:
        return None
    if isinstance(sink, (str, os.PathLike)):
        path = Path(sink)
        if path.is_dir():
            raise ConfigError(f"sink={str(path)!r} is a folder; give a .jsonl file path or a callable")
        if not path.parent.is_dir():
            raise ConfigError(
                f"sink={str(path)!r}: the folder {str(path.parent)!r} does not exist; create it "
                "or give another path"
            )
        return _JsonlSink(path)
    if callable(sink):
        return sink
    raise ConfigError(
        f"sink must be a JSONL file path or a callable taking a RunResult, got {type(sink).__name__}"
    )
