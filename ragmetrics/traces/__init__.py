"""The old import path of traces in: everything here lives in :mod:`ragmetrics.observe`."""

from ragmetrics.observe import (
    MAX_VALUE_CHARS,
    Cursor,
    parse_time,
    parse_where,
    select_traces,
    trace_rows,
    trace_sample,
)

__all__ = [
    "MAX_VALUE_CHARS",
    "Cursor",
    "parse_time",
    "parse_where",
    "select_traces",
    "trace_rows",
    "trace_sample",
]
