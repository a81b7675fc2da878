"""``ragmetrics eval --traces``: the flags that read production traces and send the scores back.

``--traces FILE`` reads an OTLP JSON file (see :mod:`ragmetrics.observe.otlp`), ``--traces
phoenix:http://HOST:PORT[/PROJECT]`` a Phoenix server's spans (:mod:`ragmetrics.observe.phoenix`);
``--sample``, ``--seed``, ``--since``, ``--until`` and ``--where`` choose traces; ``--incremental CURSOR``
scores only traces not scored before; ``--export otel`` sends one ``gen_ai.evaluation.result`` event per
result over OTLP/HTTP;
``--export mlflow:TRACKING_URI`` logs the run (aggregates, params, records and report) to MLflow;
``--export phoenix:URL`` logs one span annotation per result on the evaluated span.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ragmetrics.cli._args import unit_float
from ragmetrics.errors import ConfigError, ExportError

__all__ = ["add_trace_flags", "export_target", "finish_traces", "trace_data"]


def add_trace_flags(parser: argparse.ArgumentParser) -> None:
    """Register the trace flags on ``ragmetrics eval``."""
    group = parser.add_argument_group("production traces (OpenTelemetry)")
    group.add_argument(
        "--traces",
        metavar="FILE|phoenix:URL",
        help="score the traces of an OTLP JSON file (the Collector's file exporter format), or of a Phoenix "
        "server's project (phoenix:http://HOST:PORT[/PROJECT]; needs ragmetrics[phoenix]), instead of DATA",
    )
    group.add_argument(
        "--sample", type=unit_float, metavar="SHARE", help="score this share of the traces (seeded)"
    )
    group.add_argument("--seed", type=int, default=0, help="the sample's seed (0)")
    group.add_argument(
        "--since", metavar="TIME", help="only traces that started at or after TIME (ISO 8601 or unix s)"
    )
    group.add_argument("--until", metavar="TIME", help="only traces that started before TIME")
    group.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only traces whose root span has this attribute value (or root_name=NAME); repeatable",
    )
    group.add_argument(
        "--incremental",
        metavar="CURSOR",
        help="score only traces not in CURSOR (a JSON file of scored trace ids, updated after the run)",
    )
    group.add_argument(
        "--export",
        action="append",
        default=[],
        type=export_target,
        metavar="{otel,mlflow:TRACKING_URI,phoenix:URL}",
        help="send the scores on (repeatable): otel = gen_ai.evaluation.result events over OTLP/HTTP "
        "(OTEL_EXPORTER_OTLP_* settings; needs ragmetrics[otel]); mlflow:TRACKING_URI = one MLflow run "
        "with the aggregates as metrics, the settings as params, the records and HTML report as "
        "artifacts (experiment MLFLOW_EXPERIMENT_NAME, default ragmetrics; needs ragmetrics[mlflow]); "
        "phoenix:URL = one span annotation per result on the trace's root span (needs ragmetrics[phoenix])",
    )


def export_target(value: str) -> str:
    """An ``--export`` value: ``otel``, ``mlflow:TRACKING_URI`` or ``phoenix:URL``."""
    if value == "otel" or (value.startswith("mlflow:") and value[len("mlflow:") :].strip()):
        return value
    if value.startswith("phoenix:"):
        from ragmetrics.observe.phoenix import parse_phoenix_url

        try:
            parse_phoenix_url(value, "--export")
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return value
    raise argparse.ArgumentTypeError(
        f"{value!r}: expected otel or mlflow:TRACKING_URI (e.g. mlflow:http://127.0.0.1:5000), or "
        "phoenix:URL (e.g. phoenix:http://127.0.0.1:6006)"
    )


def trace_data(args: argparse.Namespace) -> tuple[list[Any], Any, str | None]:
    """The rows to score from ``--traces``, the cursor (None without ``--incremental``), and a line.

    The line is what to print when an incremental run has nothing new (exit 0: nothing to pay for).

    Raises:
        ConfigError: A bad flag value, an unreadable file, a damaged cursor, or no trace at all.
    """
    from ragmetrics.observe import Cursor, parse_time, parse_where, select_traces, trace_rows

    cursor = Cursor(args.incremental) if args.incremental else None
    where = parse_where(args.where)
    since = parse_time(args.since, "--since") if args.since else None
    phoenix = args.traces.startswith("phoenix:")
    every = trace_rows(args.traces, since_ns=since) if phoenix else trace_rows(Path(args.traces))
    rows = select_traces(
        every,
        sample=args.sample,
        seed=args.seed,
        since=since,
        until=parse_time(args.until, "--until") if args.until else None,
        where=where,
        cursor=cursor,
    )
    rows = rows[: args.limit] if args.limit else rows
    if rows:
        return rows, cursor, None
    if cursor is not None and cursor.scored:
        done = (
            f"ragmetrics: no new traces in {args.traces} ({len(cursor.scored)} already scored); "
            "nothing to pay for"
        )
        return rows, cursor, done
    why = _why_none(args.traces, every, where)
    raise ConfigError(f"--traces: {args.traces} holds no trace to score{why}")


def _why_none(source: str, every: list[Any], where: dict[str, str]) -> str:
    """Why no trace is left: none at all, a ``--where`` key no trace has, or the filters together."""
    roots = [r.source for r in every if r.source and r.source.get("trace_id")]
    if not roots:
        return " (it has none)"
    absent = [k for k in where if not any(k in root or k in root.get("attributes", {}) for root in roots)]
    if absent:
        why = (
            f" (--where {absent[0]}: none of its {len(roots)} traces has that key; the root span's "
            "attributes and root_name are matched"
        )
        if source.startswith("phoenix:"):
            why += (
                "; Phoenix returns no resource attributes such as service.name: name the project "
                "instead, phoenix:http://HOST:PORT/PROJECT"
            )
        return why + ")"
    return f" (none of its {len(roots)} traces is left after --sample/--since/--until/--where)"


def finish_traces(args: argparse.Namespace, cursor: Any, records: Any) -> tuple[list[str], str | None]:
    """After a run: update and save the cursor, send the scores to each ``--export`` target.

    Returns the lines to print and, when an export failed, its message (the run then exits 1; the
    records and report are written first).

    Raises:
        MissingDependencyError: ``--export otel`` without the ``otel`` extra, ``--export mlflow:URI``
            without the ``mlflow`` extra, ``--export phoenix:URL`` without the ``phoenix`` extra.
    """
    lines = []
    if cursor is not None:
        added = cursor.add(records)
        cursor.save()
        lines.append(f"{added} traces added to the cursor {cursor.path} ({len(cursor.scored)} scored in all)")
    for target in getattr(args, "export", []):
        if target == "otel":
            from ragmetrics.observe.otel import export_otel

            try:
                sent = export_otel(records)
            except ExportError as exc:
                return lines, str(exc)
            lines.append(f"Sent {sent} gen_ai.evaluation.result events over OTLP/HTTP")
        elif target.startswith("mlflow:"):
            from ragmetrics.observe.mlflow import export_mlflow

            uri = target[len("mlflow:") :].strip()
            data = getattr(args, "traces", None) or getattr(args, "data", None)
            try:
                run_id = export_mlflow(
                    records,
                    uri,
                    data=Path(data).name if data else None,
                    run_name=Path(data).stem if data else None,
                    records_path=getattr(args, "out", None),
                    report_path=getattr(args, "report", None),
                )
            except ExportError as exc:
                return lines, str(exc)
            lines.append(f"Logged the run to MLflow at {uri}: run {run_id}")
        elif target.startswith("phoenix:"):
            from ragmetrics.observe.phoenix_export import export_phoenix

            try:
                logged, unlinked, sessions = export_phoenix(records, target)
            except ExportError as exc:
                return lines, str(exc)
            line = f"Logged {logged} span annotations to Phoenix at {target[len('phoenix:') :]}"
            if sessions:
                line += f", and {sessions} session annotations"
            if unlinked:
                line += f" ({unlinked} results came from no span and were not logged)"
            lines.append(line)
    return lines, None
