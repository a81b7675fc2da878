"""Where traces are read from: an OTLP JSON file or a Phoenix server, as one dataset row per trace.

:func:`trace_rows` is the one entry point of traces in (``--traces`` and ``evaluate(traces=...)``): it
picks the reader (:mod:`.otlp` for a file, :mod:`.phoenix` for ``phoenix:URL``) and turns the spans into
rows (:func:`rows_from_spans`): one sample per trace (:mod:`.samples`), one conversation per session
(:mod:`.sessions`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ragmetrics.errors import ConfigError
from ragmetrics.observe.otlp import read_otlp_json
from ragmetrics.observe.samples import MAX_SPANS, trace_sample
from ragmetrics.observe.sessions import session_of, session_row
from ragmetrics.observe.spans import SpanProblem, TraceSpan
from ragmetrics.pipeline.dataset import Row

__all__ = ["rows_from_spans", "trace_rows"]


def trace_rows(source: str | os.PathLike[str], *, since_ns: int | None = None) -> list[Row]:
    """One dataset row per trace, in the order traces first appear.

    ``source`` is an OTLP JSON file, or ``phoenix:http://HOST:PORT[/PROJECT]`` for the spans a running
    Phoenix server holds (see :mod:`ragmetrics.observe.phoenix`). ``since_ns`` (unix nanoseconds): a
    Phoenix server sends only the traces whose root starts then or later (and the ones that window
    cuts, whole); a file is read whole (:func:`~ragmetrics.observe.select.select_traces` applies the
    window to either).
    """
    if isinstance(source, str) and source.startswith("phoenix:"):
        from ragmetrics.observe.phoenix import read_phoenix  # loads httpx: only for a Phoenix source

        return rows_from_spans(read_phoenix(source, since_ns=since_ns), source)
    return rows_from_spans(read_otlp_json(source), source)


def _twice(spans: list[TraceSpan]) -> str | None:
    """A span id the trace holds twice, named with where each copy was read; None when there is none."""
    seen: dict[str, TraceSpan] = {}
    for span in spans:
        first = seen.setdefault(span.span_id, span)
        if first is not span:
            where = f" ({first.origin} and {span.origin})" if first.origin and span.origin else ""
            return (
                f"span {span.span_id} appears twice{where}, and which copy is the trace's is not guessed; "
                "a span is exported once: remove the repeated export (or give each span its own id)"
            )
    return None


def rows_from_spans(
    items: Iterable[TraceSpan | SpanProblem | str], source: str | os.PathLike[str]
) -> list[Row]:
    """Spans grouped by trace, one row per trace; the traces of one session, one conversation row.

    A trace whose spans name a session (``session.id``, ``gen_ai.conversation.id``) is a turn of that
    session's conversation row (see :mod:`.sessions`). A problem string is an invalid row of its own;
    a :class:`SpanProblem` makes its trace an invalid row
    (spans of it could not be read), as does a span id the trace holds twice.
    """
    traces: dict[str, list[TraceSpan]] = {}
    damaged: dict[str, str] = {}
    problems: list[str] = []
    count = 0
    for item in items:
        if isinstance(item, str):
            problems.append(item)
            continue
        count += 1
        if count > MAX_SPANS:
            fix = (
                "read a window of it with --since" if str(source).startswith("phoenix:") else "split the file"
            )
            raise ConfigError(f"--traces: {source} holds more than {MAX_SPANS:,} spans; {fix}")
        if isinstance(item, SpanProblem):
            damaged.setdefault(item.trace_id, item.message)
            traces.setdefault(item.trace_id, [])
        elif not item.trace_id:
            problems.append(f"a span named {item.name!r} has no traceId; skipped")
        else:
            traces.setdefault(item.trace_id, []).append(item)
    sessions: dict[str, tuple[str, list[tuple[str, list[TraceSpan]]]]] = {}
    in_session: dict[str, str] = {}
    for trace_id, spans in traces.items():
        if (found := session_of(spans)) is not None:
            sessions.setdefault(found[1], (found[0], []))[1].append((trace_id, spans))
            in_session[trace_id] = found[1]
    rows: list[Row] = []
    for trace_id, spans in traces.items():
        if trace_id in in_session:  # a session is one conversation row, where its first trace appears
            name = in_session[trace_id]
            if name in sessions:
                key, members = sessions.pop(name)
                bad = {}  # traces of it that could not be read whole
                for member, member_spans in members:
                    twice = _twice(member_spans)
                    if member in damaged or twice:
                        bad[member] = damaged.get(member) or f"trace {member}: {twice}"
                rows.append(session_row(len(rows), key, name, members, bad))
            continue
        if not spans:  # every span of it was on lines that could not be read
            rows.append(Row(len(rows), {"id": trace_id}, damaged[trace_id], source={"trace_id": trace_id}))
            continue
        values, problem = trace_sample(trace_id, spans)
        source_meta = {"trace_id": trace_id, **values.get("meta", {})}
        twice = _twice(spans)
        problem = damaged.get(trace_id) or (f"trace {trace_id}: {twice}" if twice else None) or problem
        if problem is not None:  # its id kept, so its record is named by the trace
            rows.append(Row(len(rows), {"id": trace_id}, problem, source=source_meta))
            continue
        missing = values["meta"].get("contexts_problem")
        fields = {"contexts": missing} if missing else None
        rows.append(Row(len(rows), values, source=source_meta, field_problems=fields))
    for problem in problems:
        rows.append(Row(len(rows), None, problem))
    return rows
