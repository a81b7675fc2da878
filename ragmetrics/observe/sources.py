"""Where traces are read from: an OTLP JSON file or a Phoenix server, as one dataset row per trace.

:func:`trace_rows` is the one entry point of traces in (``--traces`` and ``evaluate(traces=...)``): it
picks the reader (:mod:`.otlp` for a file, :mod:`.phoenix` for ``phoenix:URL``) and turns the spans into
rows (:mod:`.samples`).
"""

from __future__ import annotations

import os

from ragmetrics.observe.otlp import read_otlp_json
from ragmetrics.observe.samples import rows_from_spans
from ragmetrics.pipeline.dataset import Row

__all__ = ["trace_rows"]


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
