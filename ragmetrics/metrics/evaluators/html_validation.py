"""The ``html_validation`` evaluator (an output contract, like the JSON ones in ``structured``).

The output is parsed with the standard library's HTML tokenizer (never regexes) and an explicit
element stack, in linear time. Text outside any element, or no element at all, fails outright (score
0); otherwise the score is the share of accepted elements: any recognised HTML element by default, only
``allowed_tags`` when given, never ``blocked_tags``. Elements inside ``<svg>``/``<math>`` are judged by
that root. A tag or comment left unterminated at the end of the output is read as text where it stands
(so at top level it fails as text outside any element). The *entire* output is read: a markdown code
fence around it fails, and the reasoning says so. More than ``max_chars`` characters (1,000,000, about
1.5 s of tokenizing) gives an ``invalid_input`` result without parsing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from html.parser import HTMLParser
from typing import Any

from ragmetrics.errors import ConfigError, shorten
from ragmetrics.metrics.evaluators._output_checks import check_limit, fence_hint, too_long
from ragmetrics.metrics.evaluators.base import DEFAULT_THRESHOLD, Evaluator, Scored

__all__ = ["HTML_ELEMENTS", "HTML_MAX_CHARS", "HtmlValidationEvaluator"]

HTML_MAX_CHARS = 1_000_000
"""Default size limit of ``html_validation`` (a pure-Python tokenizer: about 1.5 s per million characters)."""

HTML_ELEMENTS = frozenset(
    """a abbr address area article aside audio b base bdi bdo blockquote body br button canvas caption
    cite code col colgroup data datalist dd del details dfn dialog div dl dt em embed fieldset figcaption
    figure footer form h1 h2 h3 h4 h5 h6 head header hgroup hr html i iframe img input ins kbd label
    legend li link main map mark math menu meta meter nav noscript object ol optgroup option output p
    picture pre progress q rp rt ruby s samp script search section select slot small source span strong
    style sub summary sup svg table tbody td template textarea tfoot th thead time title tr track u ul
    var video wbr""".split()
)
"""The elements of the WHATWG HTML standard: what "any recognised HTML tag" accepts."""
_VOID = frozenset("area base br col embed hr img input link meta source track wbr param keygen".split())
_FOREIGN_ROOTS = frozenset({"svg", "math"})
_TAG_NAME = re.compile(r"\A[a-z][a-z0-9-]*\Z")


def _unterminated_kind(tail: str) -> str:
    if tail.startswith("<!--"):
        return "comment"
    if tail.startswith("</"):
        return "end tag"
    if tail.startswith(("<!", "<?")):
        return "declaration"
    return "tag"


class _ElementScan(HTMLParser):
    """Tokenize with the standard library's parser and keep an explicit stack of open elements."""

    def __init__(self, accept: Any) -> None:
        super().__init__(convert_charrefs=True)
        self._accept = accept
        self.stack: list[str] = []
        self.open: Counter[str] = Counter()  # open elements by tag: an unmatched end tag costs O(1)
        self.foreign: list[int] = []  # stack indices of open <svg>/<math> roots
        self.total = 0
        self.accepted = 0
        self.rejected: Counter[str] = Counter()
        self.tags: Counter[str] = Counter()
        self.outside: list[str] = []
        self.unterminated: str | None = None  # what the output ends inside of, if anything

    def _element(self, tag: str, *, opens: bool) -> None:
        root = self.stack[self.foreign[-1]] if self.foreign else None
        self.total += 1
        self.tags[tag] += 1
        if self._accept(tag, root):
            self.accepted += 1
        else:
            self.rejected[tag] += 1
        if opens and tag not in _VOID:
            if tag in _FOREIGN_ROOTS and not self.foreign:
                self.foreign.append(len(self.stack))
            self.stack.append(tag)
            self.open[tag] += 1

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, opens=True)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._element(tag, opens=False)

    def handle_endtag(self, tag: str) -> None:
        if not self.open[tag]:
            return  # an end tag with no open element: ignored, as browsers do
        # Close up to and including the innermost open `tag`. Every element popped here was pushed
        # once, so the whole document costs linear time (a scan of the stack per end tag was
        # quadratic: 40,000 <div> then 40,000 </p> took 43 s).
        while True:
            closed = self.stack.pop()
            self.open[closed] -= 1
            if closed == tag:
                break
        while self.foreign and self.foreign[-1] >= len(self.stack):
            self.foreign.pop()

    def handle_data(self, data: str) -> None:
        if not self.stack and data.strip() and len(self.outside) < 3:
            self.outside.append(data.strip())

    def finish(self) -> None:
        """End the document in linear time (instead of :meth:`close`).

        After :meth:`feed`, what the tokenizer could not consume is an unterminated tag, comment or
        declaration running to the end of the input. Python's ``close()`` before 3.13.4 re-scans to the
        end for every ``<`` in it (quadratic: ``"<p>" + "<a" * 100_000`` took 37 s); here that tail is
        read once, as text where it stands (so at top level it is text outside any element).
        """
        tail = self.rawdata
        if len(tail) > 2 and tail[0] == "<" and not self.cdata_elem:
            self.rawdata = ""
            self.unterminated = _unterminated_kind(tail)
            self.handle_data(tail)
        else:  # text, or a lone "<" or "</": close() reads it in one step
            self.close()


def _tag_set(tags: object, option: str) -> frozenset[str] | None:
    if tags is None:
        return None
    if isinstance(tags, str):
        tags = [t for t in tags.split(",") if t.strip()]
    if not isinstance(tags, (list, tuple, set, frozenset)):
        raise ConfigError(f"html_validation: {option} must be a list of tag names, got {tags!r}")
    out = set()
    for tag in tags:
        name = tag.strip().strip("<>/").lower() if isinstance(tag, str) else None
        if not name or not _TAG_NAME.match(name):
            raise ConfigError(f"html_validation: {option} holds an invalid tag name {tag!r}")
        out.add(name)
    return frozenset(out)


class HtmlValidationEvaluator(Evaluator):
    """The whole output must be HTML; its elements are scored against the tag rules.

    Args:
        threshold: Pass mark for the share of accepted elements (default 0.9).
        allowed_tags: Only these tags are accepted (default: any recognised HTML element).
        blocked_tags: These tags are rejected wherever they appear.
        negate: Invert the score.
        max_chars: Outputs longer than this are not parsed (``invalid_input``).
    """

    name = "html_validation"
    by_name = True

    def __init__(
        self,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        allowed_tags: Iterable[str] | None = None,
        blocked_tags: Iterable[str] | None = None,
        negate: bool = False,
        max_chars: int = HTML_MAX_CHARS,
    ) -> None:
        super().__init__(threshold=threshold, negate=negate)
        self.allowed_tags = _tag_set(allowed_tags, "allowed_tags")
        self.blocked_tags = _tag_set(blocked_tags, "blocked_tags") or frozenset()
        both = (self.allowed_tags or frozenset()) & self.blocked_tags
        if both:
            raise ConfigError(f"html_validation: tags {sorted(both)} are both allowed and blocked")
        self.max_chars = check_limit(max_chars, "max_chars", self.name, 1)

    def _options(self) -> dict[str, object]:
        return {
            "threshold": self.threshold,
            "allowed_tags": sorted(self.allowed_tags) if self.allowed_tags is not None else None,
            "blocked_tags": sorted(self.blocked_tags),
            "negate": self.negate,
        }

    def _accepts(self, tag: str, root: str | None) -> bool:
        if tag in self.blocked_tags:
            return False
        if self.allowed_tags is not None:
            return tag in self.allowed_tags or (root is not None and root in self.allowed_tags)
        return tag in HTML_ELEMENTS or root is not None

    def _score_sync(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        if (over := too_long(prediction, self.max_chars, "output")) is not None:
            return over
        scan = _ElementScan(self._accepts)
        try:
            scan.feed(prediction)
            scan.finish()
        except Exception as exc:  # noqa: BLE001 - the tokenizer must never turn bad markup into a crash
            return Scored(score=0.0, reasoning=f"The output could not be tokenized as HTML: {exc}.")
        hint = fence_hint(prediction)
        details: dict[str, Any] = {
            "elements": scan.total,
            "accepted": scan.accepted,
            "rejected": dict(scan.rejected),
            "tags": dict(scan.tags.most_common(50)),
        }
        if scan.unterminated:
            details["unterminated"] = scan.unterminated
            hint += f" The output ends inside an unterminated {scan.unterminated}, read as text."
        if scan.outside:
            details["text_outside"] = [shorten(t, 80) for t in scan.outside]
            return Scored(
                score=0.0,
                reasoning=f"Text outside any element: {shorten(scan.outside[0], 60)!r}.{hint}",
                details=details,
            )
        if scan.total == 0:
            return Scored(score=0.0, reasoning=f"The output holds no HTML element.{hint}", details=details)
        score = scan.accepted / scan.total
        rejected = ", ".join(f"<{t}> x{n}" for t, n in scan.rejected.most_common(5))
        reasoning = f"{scan.accepted} of {scan.total} elements accepted"
        reasoning += f" (rejected: {rejected})" if rejected else ""
        reasoning += f", threshold: {self.threshold:.4f}.{hint}"
        return Scored(score=score, reasoning=reasoning, details=details)
