"""Scores out to Phoenix: one span annotation per metric result, on the span the sample came from.

``--export phoenix:http://HOST:PORT`` logs, for each record of a sample read from traces and each metric,
a span annotation (``POST /v1/span_annotations`` through ``arize-phoenix-client``) on the trace's root
span (``meta.span_id``), so Phoenix shows it beside the trace (fields: :func:`span_annotations`).
Phoenix keeps one annotation per (name, span, identifier), so scoring a trace again replaces its
annotation. A record with no span id (a sample from a data file) is counted as unlinked. A session read
from traces gets, per metric, one session annotation with the mean over its turns
(:func:`session_annotations`; Phoenix 12 and later), beside its turns' span annotations. Needs the
``phoenix`` extra: ``pip install 'ragmetrics[phoenix]'``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ragmetrics.errors import ConfigError, ExportError, shorten
from ragmetrics.observe.phoenix import parse_phoenix_url, phoenix_client
from ragmetrics.observe.sessions import session_summaries

__all__ = ["export_phoenix", "session_annotations", "span_annotations"]

_BATCH = 500
_MAX_EXPLANATION = 4000


def span_annotations(records: Iterable[Any]) -> tuple[list[dict[str, Any]], int]:
    """The annotations to log, and how many metric results had no span to go on.

    A session's own record (its scores go to the session) is not counted as having no span.

    Each annotation's fields:

    * ``name``: the metric's name (``faithfulness``); ``annotator_kind``: ``LLM``;
    * ``result.score``: the score (absent when the metric produced none);
    * ``result.label``: ``passed`` or ``failed`` at the metric's threshold; without a threshold verdict, the
      status when it is not ``ok`` (``invalid_input``, ``provider_error``...);
    * ``result.explanation``: the result's reason, or the error message (at most 4,000 characters);
    * ``metadata``: ``{"status": ..., "sample_id": ..., "source": "ragmetrics"}``.
    """
    annotations: list[dict[str, Any]] = []
    unlinked = 0
    for record in records:
        meta = record.sample.meta if record.sample is not None else record.extra
        span_id = meta.get("span_id") if isinstance(meta, dict) else None
        for metric in record.scores:
            if not span_id:
                unlinked += 0 if isinstance(meta, dict) and meta.get("session_id") else 1
                continue
            status = record.status_of(metric)
            result = record.results.get(metric)
            outcome: dict[str, Any] = {}
            score = record.scores.get(metric)
            if score is not None:
                outcome["score"] = float(score)
            if result is not None and result.passed is not None:
                outcome["label"] = "passed" if result.passed else "failed"
            elif status != "ok":
                outcome["label"] = status
            reason = result.reason if result is not None else None
            if reason is None:
                reason = next((e.message for e in record.errors if e.metric in (metric, None)), None)
            if reason:
                outcome["explanation"] = reason[:_MAX_EXPLANATION]
            if not outcome:
                outcome["label"] = status
            annotations.append(
                {
                    "name": metric,
                    "span_id": str(span_id),
                    "annotator_kind": "LLM",
                    "result": outcome,
                    "metadata": {"status": status, "sample_id": record.id, "source": "ragmetrics"},
                }
            )
    return annotations, unlinked


def session_annotations(records: Iterable[Any]) -> list[dict[str, Any]]:
    """Per session read from traces and per metric, one session annotation: the mean over its turns.

    ``name`` is the metric, ``result.score`` the mean (absent, and ``result.label`` ``unscored``, when
    no turn has a score), ``metadata`` ``{"scope": "session", "turns", "scored", "source": "ragmetrics"}``.
    """
    found = []
    for summary in session_summaries(records):
        result: dict[str, Any] = (
            {"score": summary["mean"]} if summary["mean"] is not None else {"label": "unscored"}
        )
        found.append(
            {
                "name": summary["metric"],
                "session_id": summary["session_id"],
                "annotator_kind": "LLM",
                "result": result,
                "metadata": {
                    "scope": "session",
                    "turns": summary["turns"],
                    "scored": summary["scored"],
                    "source": "ragmetrics",
                },
            }
        )
    return found


def export_phoenix(records: Iterable[Any], target: str) -> tuple[int, int, int]:
    """Log one span annotation per metric result, and the sessions' annotations, to Phoenix.

    Returns:
        The span annotations logged, the results with no span to go on, the session annotations logged.

    Raises:
        ExportError: Phoenix could not be reached or refused the annotations.
        MissingDependencyError: The ``phoenix`` extra is not installed.
    """
    import httpx  # a dependency of openai and of the Phoenix client

    try:
        base_url, _ = parse_phoenix_url(target, "--export")
    except ConfigError as exc:
        raise ExportError(str(exc)) from None
    records = list(records)
    annotations, unlinked = span_annotations(records)
    client = phoenix_client(base_url, "exporting scores to Phoenix")
    logged = 0
    for start in range(0, len(annotations), _BATCH):
        batch = annotations[start : start + _BATCH]
        try:
            client.spans.log_span_annotations(span_annotations=batch, sync=True)
        except httpx.HTTPStatusError as exc:
            raise ExportError(
                f"--export phoenix: Phoenix at {base_url} refused {len(annotations) - logged} of "
                f"{len(annotations)} span annotations (HTTP {exc.response.status_code}: "
                f"{exc.response.text[:300]})"
            ) from None
        except httpx.HTTPError as exc:
            raise ExportError(
                f"--export phoenix: cannot reach Phoenix at {base_url} ({exc}); "
                f"{len(annotations) - logged} of {len(annotations)} span annotations not logged"
            ) from None
        logged += len(batch)
    sessions = session_annotations(records)
    spans_logged = logged
    for start in range(0, len(sessions), _BATCH):  # Phoenix 12 and later annotate sessions
        try:
            client.sessions.log_session_annotations(
                session_annotations=sessions[start : start + _BATCH], sync=True
            )
        except (httpx.HTTPError, ValueError) as exc:
            raise ExportError(
                f"--export phoenix: Phoenix at {base_url} did not take the {len(sessions)} session "
                f"annotations ({shorten(str(exc), 300)}); the {logged} span annotations were logged"
            ) from None
        logged += len(sessions[start : start + _BATCH])
    return spans_logged, unlinked, logged - spans_logged
