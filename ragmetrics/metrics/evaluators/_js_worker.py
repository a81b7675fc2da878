r"""The custom evaluator's sandbox process: runs JavaScript in QuickJS, one fresh context per request.

Started by ``_js_pool`` as ``python -I <this file>``; it imports only the standard library and
``quickjs``, so whatever the JavaScript does (spin, exhaust memory, crash QuickJS) happens here and the
host never stalls or dies. Frames on stdin and stdout are a 4-byte big-endian length and UTF-8 JSON:
``ready`` first, then one reply per ``run`` or ``check`` request. Caps held here for the whole
evaluation: QuickJS's memory limit, a deadline checked before every promise job, ``RLIMIT_AS`` and
``RLIMIT_CPU``; the parent enforces the wall-clock cap by killing the process.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any, BinaryIO

try:
    import resource
except ImportError:  # pragma: no cover - not POSIX: QuickJS's own memory limit still holds
    resource = None  # type: ignore[assignment]

MAX_RESULT_CHARS = 8 * 1024 * 1024
"""Longest JSON text a result may be (what the function returned, serialised)."""
MAX_RESULT_DEPTH = 100
"""Deepest nesting of objects and arrays a result may have."""
_SLACK_BYTES = 192 * 1024 * 1024  # Python's own allocations while a request is handled
_CPU_SLACK_S = 5  # RLIMIT_CPU backstop beyond the time cap; the parent normally kills sooner
_SURROGATE = re.compile("[\ud800-\udfff]")  # in a Python str, always unpaired

# Runs inside the sandbox. The user's source is first tried as an expression (the documented arrow
# function form), then as a script whose completion value is the function. Results leave as JSON text.
HARNESS = r"""
globalThis.__rm_result = null;
(function () {
  var src = JSON.parse(globalThis.__rm_source);
  var out = ("__rm_output_json" in globalThis) ? JSON.parse(globalThis.__rm_output_json)
                                               : globalThis.__rm_output;
  var MAX_DEPTH = __MAX_DEPTH__, MAX_CHARS = __MAX_CHARS__;
  delete globalThis.__rm_source;
  delete globalThis.__rm_output;
  delete globalThis.__rm_output_json;
  var lone = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
  function wellFormed(s) { return s.replace(lone, "\ufffd"); }
  // (no wellFormed here: at the memory cap it may not fit, and the parent cleans error text anyway)
  function describe(e) {
    try { return (e && e.stack) ? String(e) + "\n" + e.stack : String(e); } catch (_) {}
    try { if (e instanceof InternalError) return "InternalError: " + e.message; } catch (_) {}
    // describing it failed too: at the memory cap even building the message string can fail
    return "an error that could not be described (likely out of memory)";
  }
  // A plain, JSON-ready copy of what the function returned: depth-limited (JSON.stringify of a deeply
  // nested value overflows QuickJS's native stack), cycle-checked, strings made well-formed.
  function plain(v, depth, parents) {
    if (v !== null && typeof v === "object" && typeof v.toJSON === "function") v = v.toJSON();
    if (typeof v === "string") return wellFormed(v);
    if (typeof v === "number") return isFinite(v) ? v : null;
    if (v === null || typeof v === "boolean") return v;
    if (typeof v === "bigint") throw new TypeError("a BigInt cannot be turned into JSON");
    if (typeof v !== "object") return undefined;
    if (depth >= MAX_DEPTH) throw new RangeError("it is nested deeper than " + MAX_DEPTH + " levels");
    if (parents.indexOf(v) >= 0) throw new TypeError("it contains a circular reference");
    parents.push(v);
    var copy, item, i;
    if (Array.isArray(v)) {
      copy = [];
      for (i = 0; i < v.length; i++) {
        item = plain(v[i], depth + 1, parents);
        copy.push(item === undefined ? null : item);
      }
    } else {
      copy = {};
      var keys = Object.keys(v);
      for (i = 0; i < keys.length; i++) {
        item = plain(v[keys[i]], depth + 1, parents);
        if (item !== undefined) {
          Object.defineProperty(copy, wellFormed(keys[i]),
            {value: item, enumerable: true, writable: true, configurable: true});
        }
      }
    }
    parents.pop();
    return copy;
  }
  function nonFinite(v) { return (typeof v === "number" && !isFinite(v)) ? String(v) : null; }
  function settle(ok, payload) {
    var text;
    try {
      if (!ok) {
        text = JSON.stringify({ok: false, error: payload});
      } else {
        var odd = null, value;
        if (payload !== null && typeof payload === "object" && "score" in payload) {
          var score = payload.score, details = payload.details;
          odd = nonFinite(score);
          value = {score: plain(score, 1, []), details: plain(details, 1, [])};
        } else {
          odd = nonFinite(payload);
          value = plain(payload, 0, []);
        }
        text = JSON.stringify({ok: true, value: value === undefined ? null : value, nonfinite: odd});
      }
      if (text.length > MAX_CHARS) {
        text = JSON.stringify({ok: false, kind: "unusable", error: "its JSON is " + text.length +
          " characters long, over the limit of " + MAX_CHARS});
      }
    } catch (e) {
      text = JSON.stringify({ok: false, kind: "unusable", error: describe(e)});
    }
    globalThis.__rm_result = text;
  }
  Promise.resolve().then(function () {
    var fn;
    try {
      fn = (0, eval)("(\n" + src + "\n)");
    } catch (e) {
      if (!(e instanceof SyntaxError)) throw e;
      fn = (0, eval)(src);
    }
    if (typeof fn !== "function") {
      throw new TypeError("the custom code must evaluate to a function of the output, e.g. " +
        "(output) => ({score: 1, details: 'ok'}); it evaluated to " + typeof fn);
    }
    return fn(out);
  }).then(function (value) { settle(true, value); }, function (e) { settle(false, describe(e)); });
})();
""".replace("__MAX_DEPTH__", str(MAX_RESULT_DEPTH)).replace("__MAX_CHARS__", str(MAX_RESULT_CHARS))

SYNTAX_CHECK = r"""
(function () {
  var src = JSON.parse(globalThis.__rm_source);
  try { new Function("return (\n" + src + "\n);"); return ""; } catch (e) {}
  try { new Function(src); return ""; } catch (e) { return String(e); }
})()
"""


def _address_space() -> int | None:
    """This process's virtual size in bytes (Linux), or None where it cannot be read."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _set_soft(which: int, value: int | None) -> None:
    """Set a soft limit (never above the hard one; None restores the hard limit)."""
    if resource is None:
        return
    _soft, hard = resource.getrlimit(which)
    if value is None:
        value = hard
    elif hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, hard))


def _cap(request: dict[str, Any]) -> None:
    if resource is None:
        return
    size = _address_space()
    if size is not None:
        _set_soft(resource.RLIMIT_AS, size + int(request["memory_bytes"]) + _SLACK_BYTES)
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(used.ru_utime + used.ru_stime) + int(request["timeout"]) + 1 + _CPU_SLACK_S
    _set_soft(resource.RLIMIT_CPU, cpu)


def _uncap() -> None:
    if resource is not None:
        _set_soft(resource.RLIMIT_AS, None)
        _set_soft(resource.RLIMIT_CPU, None)


def _handle(quickjs: Any, request: dict[str, Any]) -> dict[str, Any] | str:
    deadline = time.monotonic() + float(request["timeout"])
    ctx = quickjs.Context()
    try:
        ctx.set_memory_limit(int(request["memory_bytes"]))
        ctx.set_time_limit(float(request["timeout"]))
        ctx.set("__rm_source", json.dumps(request["source"]))  # ASCII JSON: surrogates crash ctx.set
        if request["op"] == "check":
            return {"kind": "ok", "problem": str(ctx.eval(SYNTAX_CHECK))}
        output = request["output"]
        if _SURROGATE.search(output):  # as escaped JSON text, which JSON.parse turns back exactly
            ctx.set("__rm_output_json", json.dumps(output))
        else:  # directly: no JSON copy, so the whole memory cap is the script's
            ctx.set("__rm_output", output)
        ctx.eval(HARNESS)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return {
                    "kind": "timeout",
                    "error": "the time limit passed while promise jobs were still queued",
                }
            ctx.set_time_limit(left)  # QuickJS restarts its clock at every job: give each what is left
            if not ctx.execute_pending_job():
                break
        raw = ctx.eval("globalThis.__rm_result")
    except (quickjs.JSException, quickjs.StackOverflow) as exc:
        return {"kind": "error", "error": str(exc)}
    finally:
        del ctx
    if raw is None:
        return {"ok": False, "kind": "unusable", "error": "its promise never settled"}
    return _checked(raw)


def _depth(value: Any, limit: int) -> int:
    """Nesting of lists and dicts in ``value`` (iterative), or ``limit + 1`` once it is deeper."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            depth += 1
            if depth > limit:
                return limit + 1
            deepest = max(deepest, depth)
            stack.extend((child, depth) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def _checked(raw: Any) -> dict[str, Any] | str:
    """The harness's reply as read after every job ran, with the caps enforced on it here.

    The script's own jobs run after ``settle`` and may overwrite ``__rm_result`` (or the globals the
    harness uses), so what is read is not trusted to be what ``settle`` wrote: it must be a string of
    at most ``MAX_RESULT_CHARS`` (plus the reply's own keys), JSON of the reply's shape, nested at most
    ``MAX_RESULT_DEPTH`` levels below it.
    """
    unusable = "the result was changed after the function returned, and "
    if not isinstance(raw, str):
        return {"ok": False, "kind": "unusable", "error": unusable + "is not the harness's JSON text"}
    if len(raw) > MAX_RESULT_CHARS + 1024:
        return {
            "ok": False,
            "kind": "unusable",
            "error": f"its JSON is {len(raw)} characters long, over the limit of {MAX_RESULT_CHARS}",
        }
    try:
        reply = json.loads(raw)
    except (ValueError, RecursionError):
        return {"ok": False, "kind": "unusable", "error": unusable + "is not valid JSON"}
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        return {"ok": False, "kind": "unusable", "error": unusable + "is not the harness's reply"}
    if _depth(reply.get("value"), MAX_RESULT_DEPTH) > MAX_RESULT_DEPTH:
        return {
            "ok": False,
            "kind": "unusable",
            "error": f"it is nested deeper than {MAX_RESULT_DEPTH} levels",
        }
    if not isinstance(reply.get("error", ""), str) or len(reply.get("error", "")) > MAX_RESULT_CHARS:
        return {"ok": False, "kind": "unusable", "error": unusable + "its error is not text"}
    return raw


def _read(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    return data if data is not None and len(data) == size else None


def _send(stream: BinaryIO, reply: dict[str, Any] | str) -> None:
    body = (reply if isinstance(reply, str) else json.dumps(reply)).encode("utf-8", "replace")
    stream.write(len(body).to_bytes(4, "big") + body)
    stream.flush()


def main() -> None:
    """Serve requests until stdin closes."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    if resource is not None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash leaves no core file behind
    try:
        import quickjs
    except ImportError as exc:
        _send(stdout, {"kind": "internal", "error": f"cannot import quickjs: {exc}"})
        return
    _send(stdout, {"kind": "ready"})
    while True:
        header = _read(stdin, 4)
        body = _read(stdin, int.from_bytes(header, "big")) if header else None
        if body is None:
            return
        reply: dict[str, Any] | str
        try:
            request = json.loads(body.decode("utf-8", "surrogatepass"))
            _cap(request)
            reply = _handle(quickjs, request)
        except MemoryError:
            reply = {"kind": "memory", "error": "out of memory"}
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which makes it a result
            reply = {"kind": "internal", "error": f"{type(exc).__name__}: {exc}"}
        finally:
            _uncap()
        _send(stdout, reply)


if __name__ == "__main__":
    main()
