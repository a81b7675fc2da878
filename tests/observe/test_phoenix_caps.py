"""A Phoenix server that never stops paging: the reader stops at a cap with an error naming the server.

No real Phoenix here: a loopback HTTP server in a thread answers ``GET /v1/projects/{p}/spans`` with
a next cursor for ever (a new one, the same one again, huge pages, one byte at a time, or nothing at
all). The reader runs in a subprocess under a memory limit and a timeout, so a cap that does not hold
fails the test instead of stalling the machine (before the caps, the same-cursor server below was read
until 2,000,000 spans; an attacker's endless server got 196,532 requests and 471 MB in 200 s).
"""

from __future__ import annotations

import json
import subprocess
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.limited import run_limited

pytest.importorskip("phoenix.client")

MEMORY_LIMIT = 2 * 1024**3  # bytes of address space for the reader's process
PROBE_TIMEOUT_S = 60.0  # the capped reads below end in a few seconds


def _span(number: int, pad: int = 0) -> dict[str, object]:
    attributes: dict[str, object] = {"openinference.span.kind": "CHAIN", "input.value": "q"}
    if pad:
        attributes["output.value"] = "x" * pad
    return {
        "id": f"span-{number}",
        "name": "chain",
        "context": {"trace_id": f"{number:032x}", "span_id": f"{number:016x}"},
        "parent_id": None,
        "span_kind": "CHAIN",
        "start_time": "2025-01-01T00:00:00+00:00",
        "attributes": attributes,
    }


class _Endless(BaseHTTPRequestHandler):
    """Every page has spans and a next cursor; ``server.mode`` says which and how it is sent."""

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        server = self.server
        mode = server.mode  # type: ignore[attr-defined]
        with server.lock:  # type: ignore[attr-defined]
            server.requests += 1  # type: ignore[attr-defined]
            number = server.requests  # type: ignore[attr-defined]
            server.seen.append((urlsplit(self.path).path, self.headers.get("Authorization")))  # type: ignore[attr-defined]
        if mode == "silent":
            time.sleep(30)  # accepts the request and never answers
            return
        cursor = parse_qs(urlsplit(self.path).query).get("cursor", ["c0"])[0]
        following = "again" if mode == "same" else f"c{int(cursor.lstrip('c') or 0) + 1}"
        if mode == "same" and cursor == "again":
            following = "again"
        pad = 2_000_000 if mode == "huge" else 0
        body = json.dumps({"data": [_span(number, pad)], "next_cursor": following}).encode()
        if mode == "not_json":
            body = b"<html>a login page</html>"
        elif mode == "deep":
            body = b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mode == "trickle":  # one byte every 0.1 s: no read timeout ever fires
            for i in range(len(body)):
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
                time.sleep(0.1)
            return
        self.wfile.write(body)


@pytest.fixture
def phoenix(request: pytest.FixtureRequest) -> Iterator[tuple[str, ThreadingHTTPServer]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endless)
    server.daemon_threads = True
    server.mode = request.param  # type: ignore[attr-defined]
    server.requests = 0  # type: ignore[attr-defined]
    server.lock = threading.Lock()  # type: ignore[attr-defined]
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    yield url, server
    server.shutdown()
    server.server_close()


def _run(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.perf_counter()
    env = {"PHOENIX_API_KEY": "phx-test-key"}  # the Phoenix client's own variable: still sent
    done = run_limited(argv, memory=MEMORY_LIMIT, timeout=PROBE_TIMEOUT_S, env=env, what="the Phoenix read")
    return done, time.perf_counter() - started


def _read(url: str, **caps: object) -> tuple[str, float]:
    """``read_phoenix`` in a subprocess with ``caps``: the ConfigError's message and the seconds taken."""
    code = f"""
        import json, time
        from ragmetrics.errors import ConfigError
        from ragmetrics.observe.phoenix import read_phoenix
        started = time.perf_counter()
        try:
            spans = list(read_phoenix({url + "/proj"!r}, **{caps!r}))
        except ConfigError as exc:
            print(json.dumps({{"error": str(exc), "s": time.perf_counter() - started}}))
        else:
            print(json.dumps({{"spans": len(spans)}}))
    """
    done, _ = _run(["-c", textwrap.dedent(code)])
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert "error" in out, f"the read ended without an error: {out}"
    return out["error"], out["s"]


@pytest.mark.parametrize("phoenix", ["same"], indirect=True)
def test_a_server_sending_the_same_cursor_again_is_a_usage_error_at_once(
    phoenix: tuple[str, ThreadingHTTPServer], tmp_path: Path
) -> None:
    url, server = phoenix
    argv = ["-m", "ragmetrics.cli", "eval", "--traces", f"phoenix:{url}/proj", "--judge", "offline"]
    done, seconds = _run([*argv, "--metrics", "faithfulness", "--quiet", "--out", str(tmp_path / "o.jsonl")])
    assert done.returncode == 2, done.stderr[-3000:]
    assert f"Phoenix at {url} (project 'proj') sent the page cursor 'again' a second time" in done.stderr
    assert "Traceback" not in done.stderr
    assert server.requests == 2  # type: ignore[attr-defined]
    assert server.seen == [("/v1/projects/proj/spans", "Bearer phx-test-key")] * 2  # type: ignore[attr-defined]
    assert seconds < 30  # far under the probe's 60 s: the cap, not the timeout, ended it


@pytest.mark.parametrize("phoenix", ["endless"], indirect=True)
def test_a_server_that_never_stops_paging_is_stopped_at_the_page_cap(
    phoenix: tuple[str, ThreadingHTTPServer],
) -> None:
    url, server = phoenix
    error, seconds = _read(url, max_pages=300)
    assert f"Phoenix at {url} (project 'proj') kept sending a next page after 300 requests" in error
    assert "(MAX_PHOENIX_PAGES)" in error and "--since" in error
    assert server.requests == 300  # type: ignore[attr-defined]
    assert seconds < 30  # far under the probe's 60 s: the cap, not the timeout, ended it


@pytest.mark.parametrize("phoenix", ["huge"], indirect=True)
def test_a_server_sending_huge_pages_is_stopped_at_the_byte_cap(
    phoenix: tuple[str, ThreadingHTTPServer],
) -> None:
    url, server = phoenix
    error, seconds = _read(url, max_bytes=10_000_000)
    assert f"Phoenix at {url} (project 'proj') sent more than 10,000,000 bytes of spans" in error
    assert "(MAX_PHOENIX_BYTES)" in error
    assert server.requests == 5  # type: ignore[attr-defined]  # 2 MB a page: the fifth crosses 10 MB
    assert seconds < 30  # far under the probe's 60 s: the cap, not the timeout, ended it


@pytest.mark.parametrize("phoenix", ["trickle", "silent"], indirect=True)
def test_a_slow_or_silent_server_is_stopped_at_the_time_cap(
    phoenix: tuple[str, ThreadingHTTPServer],
) -> None:
    url, _ = phoenix
    error, seconds = _read(url, max_seconds=2.0)
    assert f"Phoenix at {url} (project 'proj') did not finish sending spans within 2 s" in error
    assert "(MAX_PHOENIX_SECONDS)" in error
    assert 2.0 <= seconds < 30  # not before the cap, and far under the probe's 60 s


@pytest.mark.parametrize("phoenix", ["endless"], indirect=True)
def test_the_caps_are_checked_when_the_read_starts(phoenix: tuple[str, ThreadingHTTPServer]) -> None:
    from ragmetrics.errors import ConfigError
    from ragmetrics.observe.phoenix import read_phoenix

    url, server = phoenix
    with pytest.raises(ConfigError, match="read_phoenix: max_pages must be an integer >= 1, got 0"):
        list(read_phoenix(f"{url}/proj", max_pages=0))
    assert server.requests == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize("phoenix", ["not_json", "deep"], indirect=True)
def test_a_reply_that_is_not_a_page_of_spans_is_a_usage_error(
    phoenix: tuple[str, ThreadingHTTPServer], tmp_path: Path
) -> None:
    url, _ = phoenix
    argv = ["-m", "ragmetrics.cli", "eval", "--traces", f"phoenix:{url}/proj", "--judge", "offline"]
    done, _ = _run([*argv, "--metrics", "faithfulness", "--quiet", "--out", str(tmp_path / "o.jsonl")])
    assert done.returncode == 2, done.stderr[-3000:]
    assert f"Phoenix at {url} sent a reply that is not a page of spans" in done.stderr
    assert "Traceback" not in done.stderr
