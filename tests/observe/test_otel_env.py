"""``--export otel`` configured only by the standard ``OTEL_*`` variables, to a loopback OTLP receiver."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from ragmetrics.cli import main  # noqa: E402
from tests.observe.receiver import OtlpReceiver  # noqa: E402

ROWS = [
    {"question": f"Which river flows through city {i}?", "answer": f"River {i}.", "contexts": [f"River {i}."]}
    for i in range(3)
]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "rag.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _no_ambient_otel(monkeypatch) -> None:
    for name in ("ENDPOINT", "LOGS_ENDPOINT", "HEADERS", "LOGS_HEADERS", "TIMEOUT", "LOGS_TIMEOUT"):
        monkeypatch.delenv(f"OTEL_EXPORTER_OTLP_{name}", raising=False)
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)


def _export(data: Path, capsys) -> None:
    argv = ["eval", str(data), "--judge", "offline", "--metrics", "faithfulness,relevancy", "--quiet"]
    assert main([*argv, "--export", "otel"]) == 0, capsys.readouterr()


def test_the_base_endpoint_and_headers_variables_reach_the_receiver(data: Path, monkeypatch, capsys) -> None:
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.base)  # the SDK appends /v1/logs
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cret,x-team=rag")
        _export(data, capsys)
    assert len(receiver.events) == 2 * len(ROWS)
    assert {path for path, _ in receiver.requests} == {"/v1/logs"}
    assert all(h["x-api-key"] == "s3cret" and h["x-team"] == "rag" for _, h in receiver.requests)
    assert all(h["content-type"] == "application/x-protobuf" for _, h in receiver.requests)


def test_the_logs_specific_variables_win_over_the_general_ones(data: Path, monkeypatch, capsys) -> None:
    with OtlpReceiver() as receiver, OtlpReceiver() as elsewhere:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", elsewhere.base)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=general")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_HEADERS", "x-api-key=logs")
        _export(data, capsys)
    assert not elsewhere.requests
    assert len(receiver.events) == 2 * len(ROWS)
    assert {h["x-api-key"] for _, h in receiver.requests} == {"logs"}


def test_the_resource_says_ragmetrics_unless_otel_service_name_says_otherwise(
    data: Path, monkeypatch, capsys
) -> None:
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", receiver.endpoint)
        _export(data, capsys)
        assert {e["resource"]["service.name"] for e in receiver.events} == {"ragmetrics"}
        receiver.events.clear()
        monkeypatch.setenv("OTEL_SERVICE_NAME", "rag-nightly-evals")
        monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=staging")
        _export(data, capsys)
    resources = [e["resource"] for e in receiver.events]
    assert {r["service.name"] for r in resources} == {"rag-nightly-evals"}
    assert {r["deployment.environment"] for r in resources} == {"staging"}


def test_events_go_in_batches_and_none_is_lost(tmp_path: Path, monkeypatch, capsys) -> None:
    path = tmp_path / "many.jsonl"
    rows = [{"question": f"q{i}?", "answer": f"a{i}", "contexts": [f"a{i}"]} for i in range(600)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", receiver.endpoint)
        _export(path, capsys)
    assert len(receiver.events) == 1200  # two metrics per row
    ids = {
        (e["attributes"]["ragmetrics.sample.id"], e["attributes"]["gen_ai.evaluation.name"])
        for e in receiver.events
    }
    assert len(ids) == 1200
    assert len(receiver.requests) <= 4  # batches of 512: 3 requests (one per event was 1200)
