"""The one exception hierarchy, the result statuses and the message helpers (shorten, redact, printable).

Messages say what failed, for which input, why, and what to do; the adapters translate SDK errors::

    RagMetricsError
    ├── ConfigError, PromptError, CacheError, SnapshotError, NoScoreError, BatchPendingError
    ├── InvalidInputError         a sample field is wrong (also a ValueError)
    ├── JudgeError                an LLM call failed for good
    │   └── JudgeOutputError      the judge answered, but not with usable output
    ├── MissingDependencyError    an optional extra is not installed (also an ImportError)
    └── ExportError               scores could not be sent on
    RagMetricsWarning (a UserWarning) └── OfflineJudgeWarning
"""

from __future__ import annotations

import re
from typing import Any, Literal

__all__ = [
    "STATUSES",
    "BatchPendingError",
    "CacheError",
    "ConfigError",
    "ExportError",
    "InvalidInputError",
    "JudgeError",
    "JudgeOutputError",
    "MissingDependencyError",
    "NoScoreError",
    "OfflineJudgeWarning",
    "PromptError",
    "RagMetricsError",
    "RagMetricsWarning",
    "SnapshotError",
    "Status",
    "printable",
    "redact",
    "shorten",
]


Status = Literal[
    "ok",
    "no_claims",
    "invalid_input",
    "judge_output_invalid",
    "truncated",
    "timeout",
    "rate_limited",
    "provider_error",
    "judge_untrusted",
]
STATUSES: tuple[str, ...] = Status.__args__  # type: ignore[attr-defined]
"""Every status a result may carry, ``ok`` first (the results live in :mod:`ragmetrics.score`)."""


def shorten(value: object, limit: int = 200) -> str:
    """Return ``repr``-free text of ``value`` cut in the middle to at most ``limit`` characters."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    keep = (limit - 5) // 2
    return f"{text[:keep]} ... {text[-keep:]}"


_MIN_SECRET = 8
"""Shorter keys are placeholders (``none``, ``test``), not secrets; redacting them would garble messages."""


def redact(text: str, secret: str | None) -> str:
    """``text`` with every copy of ``secret`` (an API key) replaced by ``[redacted]``.

    For provider error messages, which a proxy or gateway may fill with the request it refused.
    """
    if not secret or len(secret) < _MIN_SECRET or secret not in text:
        return text
    return text.replace(secret, "[redacted]")


_UNSAFE = re.compile(
    "["
    "\x00-\x1f\x7f-\x9f"  # C0 controls (ESC, CR, BS, BEL...), DEL and the C1 controls (CSI, OSC...)
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides and isolates
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff"  # lone surrogates (cannot be encoded; print would raise)
    "]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


def _json_escape(char: str) -> str:
    return f"\\u{ord(char):04x}"


def printable(text: object, *, multiline: bool = False, json: bool = False) -> str:
    r"""``text`` with every control, bidi and surrogate character shown as a visible escape.

    Idempotent: the escapes are plain ASCII, so escaping twice changes nothing more.

    Args:
        text: What to print (anything; it is turned into a string first).
        multiline: Keep line feeds and tabs (for blocks we lay out ourselves: tables, tracebacks);
            by default they are escaped too, so that a value stays on its line.
        json: ``text`` is JSON: use ``\uXXXX`` escapes, which keep it valid JSON with the same value,
            and keep the line feeds, tabs and carriage returns that can only be its whitespace.

    Example:
        >>> printable("id\x1b[2J\u202e")
        'id\\x1b[2J\\u202e'
    """
    value = text if isinstance(text, str) else str(text)
    if not _UNSAFE.search(value):
        return value
    keep = ("\n", "\t", "\r") if json else ("\n", "\t") if multiline else ()
    escape = _json_escape if json else _escape
    return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else escape(m.group()), value)


class RagMetricsError(Exception):
    """Root of every error raised by ragmetrics."""


class ConfigError(RagMetricsError):
    """A setting, a judge spec or a constructor argument is invalid."""


class InvalidInputError(RagMetricsError, ValueError):
    """A sample's field has the wrong type or value.

    Attributes:
        field: The field at fault (``"contexts"``, ``"contexts[2]"``, ``"question"``).
        expected: What the field should have held.
        row: The dataset row (0-based) or sample id, when known.
    """

    def __init__(
        self,
        field: str,
        expected: str,
        got: object = None,
        *,
        row: int | str | None = None,
        detail: str | None = None,
    ) -> None:
        self.field = field
        self.expected = expected
        self.row = row
        where = f"row {row}: " if row is not None else ""
        got_text = f", got {type(got).__name__} {shorten(got, 80)}" if got is not None else ""
        extra = f" ({detail})" if detail else ""
        message = f"{where}field '{field}' must be {expected}{got_text}{extra}"
        # a lone surrogate in the value (or the row id) is shown escaped, so the message can be printed
        super().__init__(message.encode("utf-8", "backslashreplace").decode("utf-8"))


class PromptError(RagMetricsError):
    """A prompt file is missing, changed in place, or rendered with missing or unused variables."""


class JudgeError(RagMetricsError):
    """An LLM judge call failed after every retry.

    Attributes:
        provider: ``openai``, ``anthropic`` or ``offline``.
        model: The model name.
        attempts: How many HTTP attempts were made (first attempt, re-asks and retries).
        reasks: How many of them re-asked after invalid output.
        status: The result status this failure maps to: ``rate_limited``, ``timeout``,
            ``provider_error``, ``judge_output_invalid`` or ``truncated``.
        http_status: The last HTTP status code, when there was one.
        usage: What the failed call cost (calls, tokens, USD): a :class:`~ragmetrics.score.Usage`, or
            None when unknown (read it with :func:`ragmetrics.score.spent_by`, which gives zero usage).
        health: For a claim metric's verification that failed after its extraction came back: the
            judge health of what came back (spans checked and found, re-asks), so the failed result
            still counts toward the run's judge health; None otherwise.
    """

    health: Any = None

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        model: str = "",
        attempts: int = 1,
        reasks: int = 0,
        status: Status = "provider_error",
        http_status: int | None = None,
        hint: str | None = None,
        usage: Any = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.attempts = attempts
        self.reasks = reasks
        self.status = status
        self.http_status = http_status
        self.hint = hint
        self.usage = usage
        who = f"{provider}:{model}" if provider else "judge"
        tries = f" after {attempts} HTTP attempt{'s' if attempts != 1 else ''}" if attempts else ""
        if reasks:
            tries += f", {reasks} of them re-ask{'s' if reasks != 1 else ''} after invalid output"
        code = f" (HTTP {http_status})" if http_status else ""
        tail = f" {hint}" if hint else ""
        self.detail = message
        super().__init__(f"{who} failed{tries}{code}: {shorten(message, 400)}.{tail}")

    def with_usage(self, usage: Any) -> JudgeError:
        """A copy of this error carrying ``usage`` instead (for a request that only joined this call)."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.args = self.args
        clone.usage = usage
        return clone


class JudgeOutputError(JudgeError):
    """The judge replied, but its output was unusable (no JSON, wrong schema, cut off, bad index).

    Attributes:
        last_reply: The last raw reply text, shortened.
        problems: The validation problems found in it.
    """

    def __init__(
        self,
        message: str,
        *,
        last_reply: str | None = None,
        problems: list[str] | None = None,
        **kwargs: object,
    ) -> None:
        self.last_reply = shorten(last_reply or "", 500)
        self.problems = list(problems or [])
        kwargs.setdefault("status", "judge_output_invalid")
        super().__init__(message, **kwargs)  # type: ignore[arg-type]


class NoScoreError(RagMetricsError):
    """A metric produced no score; ``status`` and ``message`` say why (see ``MetricResult``)."""

    def __init__(self, metric: str, status: Status, message: str) -> None:
        self.metric = metric
        self.status = status
        self.message = message
        super().__init__(f"{metric}: no score ({status}): {message}")


class BatchPendingError(RagMetricsError):
    """A batch run stopped waiting while provider batches were still running; resume it later.

    Attributes:
        batch_ids: The provider batches not finished yet.
        directory: The batch ledger folder that remembers them.
    """

    def __init__(self, batch_ids: list[str], directory: str, waited_s: float) -> None:
        self.batch_ids = list(batch_ids)
        self.directory = directory
        shown = ", ".join(self.batch_ids[:5]) + (" ..." if len(self.batch_ids) > 5 else "")
        super().__init__(
            f"{len(self.batch_ids)} provider batch(es) still running after {waited_s:.0f} s ({shown}); "
            f"nothing is lost: run again with resume=True (ragmetrics eval ... --batch --resume) to "
            f"collect them; the ledger is in {directory}"
        )


class CacheError(RagMetricsError):
    """The disk cache could not be opened, read or written."""


class SnapshotError(RagMetricsError):
    """A snapshot is missing, corrupt, of a foreign format, or named so that it escapes its store."""


class MissingDependencyError(RagMetricsError, ImportError):
    """An optional dependency is missing; the message names the extra and the install command."""

    def __init__(self, package: str, extra: str, feature: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(
            f"{feature} needs the '{package}' package, which is not installed. "
            f"Install it with: pip install 'ragmetrics[{extra}]'"
        )


class RagMetricsWarning(UserWarning):
    """Base of the warnings ragmetrics issues (filter them with ``warnings.filterwarnings``)."""


class OfflineJudgeWarning(RagMetricsWarning):
    """No ``llm=``, no ``RAGMETRICS_JUDGE`` and no provider key: the offline heuristic judge is used.

    The message names what to set; pass ``llm="offline"`` to choose the heuristic without it.
    """


class ExportError(RagMetricsError):
    """Scores could not be sent on (``--export``): the receiver refused them or could not be reached."""
