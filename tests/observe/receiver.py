"""A loopback OTLP/HTTP logs receiver: decodes what the OpenTelemetry SDK's exporter sends (protobuf)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class OtlpReceiver:
    """``with OtlpReceiver() as rx:``; ``rx.endpoint`` for OTEL_EXPORTER_OTLP_LOGS_ENDPOINT; ``rx.events``."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.events: list[dict[str, Any]] = []
        self.requests: list[tuple[str, dict[str, str]]] = []  # (path, headers) of every POST
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                if receiver.status == 200 and self.path == "/v1/logs":
                    request = ExportLogsServiceRequest()
                    request.ParseFromString(body)
                    for resource in request.resource_logs:
                        owner = {a.key: _value(a.value) for a in resource.resource.attributes}
                        for scope in resource.scope_logs:
                            for record in scope.log_records:
                                receiver.events.append(
                                    {
                                        "event_name": record.event_name,
                                        "trace_id": record.trace_id.hex(),
                                        "span_id": record.span_id.hex(),
                                        "schema_url": scope.schema_url,
                                        "attributes": {a.key: _value(a.value) for a in record.attributes},
                                        "resource": owner,
                                    }
                                )
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        """For OTEL_EXPORTER_OTLP_ENDPOINT (the SDK appends ``/v1/logs``)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1/logs"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
