r"""N-gram overlap evaluators: rouge (ROUGE-L F-measure) and bleu (sentence BLEU over 1- and 2-grams).

Both reproduce their reference implementations to the last bit (``tests/parity/``), only faster:
``rouge`` equals ``rouge_score``'s ``rougeL`` F-measure (same tokenizer and arithmetic, the longest
common subsequence from ``rapidfuzz``); ``bleu`` equals nltk's ``sentence_bleu(weights=(0.5, 0.5))``
with smoothing method1 on our tokens (``\w+|[^\w\s]``, case-folded unless ``case_sensitive``), so a
one-token output scores at most 0.316: use ``exact_match`` for labels. ROUGE-L is quadratic, so the
``rouge`` evaluator refuses sides over ``max_chars`` as ``invalid_input``. One deliberate difference:
when neither side has a token, two equal trimmed texts score 1.0 (the references return 0).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from rapidfuzz.distance import LCSseq

from ragmetrics._check import check_int
from ragmetrics.metrics.evaluators.base import DEFAULT_THRESHOLD, GradedEvaluator, Scored

__all__ = [
    "BLEU_SMOOTHING_EPSILON",
    "ROUGE_MAX_CHARS",
    "BleuEvaluator",
    "RougeEvaluator",
    "bleu_score",
    "bleu_tokens",
    "rouge_l",
    "rouge_tokens",
]

BLEU_SMOOTHING_EPSILON = 0.1
"""nltk ``SmoothingFunction().method1`` epsilon: matches counted for an n-gram order with none."""

ROUGE_MAX_CHARS = 200_000
"""Default longest side the ``rouge`` evaluator scores, in characters; at most half as many tokens
(two random texts of two-character tokens this long: ~0.7 s)."""

_ROUGE_TOKEN = re.compile(r"[a-z0-9]+")
_ROUGE_TOKEN_CASED = re.compile(r"[A-Za-z0-9]+")
_BLEU_TOKEN = re.compile(r"\w+|[^\w\s]")


def _same_text(prediction: str, reference: str, case_sensitive: bool) -> bool:
    a, b = prediction.strip(), reference.strip()
    return a == b if case_sensitive else a.casefold() == b.casefold()


# -- ROUGE-L ---------------------------------------------------------------------------------------


def rouge_tokens(text: str, *, case_sensitive: bool = False) -> list[str]:
    """rouge-score's default tokenizer (no stemming): lowercase, then runs of ``[a-z0-9]``."""
    if case_sensitive:
        return _ROUGE_TOKEN_CASED.findall(text)
    return _ROUGE_TOKEN.findall(text.lower())


def _lcs_length(a: list[str], b: list[str]) -> int:
    # Tokens become small integers so that rapidfuzz compares exact identities, not string hashes.
    vocab: dict[str, int] = {}
    ids_a = [vocab.setdefault(t, len(vocab)) for t in a]
    ids_b = [vocab.setdefault(t, len(vocab)) for t in b]
    return int(LCSseq.similarity(ids_a, ids_b))


def _rouge(prediction: str, reference: str, case_sensitive: bool) -> tuple[float, dict[str, Any]]:
    pred = rouge_tokens(prediction, case_sensitive=case_sensitive)
    ref = rouge_tokens(reference, case_sensitive=case_sensitive)
    return _rouge_of(prediction, reference, pred, ref, case_sensitive)


def _rouge_of(
    prediction: str, reference: str, pred: list[str], ref: list[str], case_sensitive: bool
) -> tuple[float, dict[str, Any]]:
    details: dict[str, Any] = {"prediction_tokens": len(pred), "reference_tokens": len(ref)}
    if not pred and not ref:
        details["no_tokens"] = True
        return (1.0 if _same_text(prediction, reference, case_sensitive) else 0.0), details
    if not pred or not ref:
        details.update(lcs=0, precision=0.0, recall=0.0)
        return 0.0, details
    lcs = _lcs_length(pred, ref)
    precision = lcs / len(pred)
    recall = lcs / len(ref)
    # rouge_score.scoring.fmeasure, operation for operation.
    fmeasure = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    details.update(lcs=lcs, precision=precision, recall=recall)
    return fmeasure, details


def rouge_l(prediction: str, reference: str, *, case_sensitive: bool = False) -> float:
    """ROUGE-L F-measure of ``prediction`` against ``reference`` (see the module docstring)."""
    return _rouge(prediction, reference, case_sensitive)[0]


class RougeEvaluator(GradedEvaluator):
    """ROUGE-L F-measure against a reference answer; good for summaries.

    Equal to rouge-score's ``rougeL`` F-measure (default tokenizer, no stemming), which counts only
    ASCII letters and digits: for text in other scripts prefer ``levenshtein``, ``f1`` or ``bleu``.
    """

    name = "rouge"

    def __init__(
        self,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        case_sensitive: bool = False,
        negate: bool = False,
        max_chars: int = ROUGE_MAX_CHARS,
    ) -> None:
        super().__init__(threshold=threshold, case_sensitive=case_sensitive, negate=negate)
        self.max_chars = check_int(max_chars, "max_chars", self.name, minimum=2)

    def _options(self) -> dict[str, object]:
        # Only a non-default cap joins the signature, so earlier snapshots of the default stay comparable.
        extra = {"max_chars": self.max_chars} if self.max_chars != ROUGE_MAX_CHARS else {}
        return {"variant": "rougeL-f", "tokenizer": "rouge_score-default", **super()._options(), **extra}

    def _over_cap(self, field: str, size: int, unit: str, cap: int) -> Scored:
        return Scored(
            score=None,
            status="invalid_input",
            message=f"the {field} is {size:,} {unit}, over rouge's limit of {cap:,} (max_chars "
            f"{self.max_chars:,}; the cost grows with the product of the two lengths); shorten it or "
            "raise max_chars",
        )

    def _score_sync(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        sides = ((prediction, "output"), (reference, "expected value"))
        for text, field in sides:
            if len(text) > self.max_chars:
                return self._over_cap(field, len(text), "characters", self.max_chars)
        tokens = []
        for text, field in sides:
            tokens.append(rouge_tokens(text, case_sensitive=self.case_sensitive))
            if len(tokens[-1]) > self.max_chars // 2:  # lower() can grow a text (U+0130 is 2 characters)
                return self._over_cap(field, len(tokens[-1]), "tokens", self.max_chars // 2)
        score, details = _rouge_of(prediction, reference, tokens[0], tokens[1], self.case_sensitive)
        if details.get("no_tokens"):
            how = "equal" if score == 1.0 else "different"
            reasoning = (
                f"Neither text has a ROUGE token (ASCII letters or digits); the texts are {how}: "
                f"{score:.4f}, threshold: {self.threshold:.4f}."
            )
        else:
            reasoning = (
                f"ROUGE-L F-measure {score:.4f} (longest common subsequence {details['lcs']} tokens; "
                f"{details['prediction_tokens']} output, {details['reference_tokens']} reference tokens), "
                f"threshold: {self.threshold:.4f}."
            )
        return Scored(score=score, reasoning=reasoning, details=details)


# -- BLEU ------------------------------------------------------------------------------------------


def bleu_tokens(text: str, *, case_sensitive: bool = False) -> list[str]:
    """Runs of word characters and single punctuation marks, case-folded unless ``case_sensitive``."""
    return _BLEU_TOKEN.findall(text if case_sensitive else text.casefold())


def _clipped_matches(hyp: Counter[Any], ref: Counter[Any]) -> int:
    get = ref.get
    return sum(min(count, get(gram, 0)) for gram, count in hyp.items())


def _bleu(hyp: list[str], ref: list[str]) -> tuple[float, dict[str, Any]]:
    """The BLEU of nltk's ``sentence_bleu`` with weights (0.5, 0.5) and method1 smoothing, float for float."""
    hyp_len, ref_len = len(hyp), len(ref)
    details: dict[str, Any] = {"prediction_tokens": hyp_len, "reference_tokens": ref_len}
    matches1 = _clipped_matches(Counter(hyp), Counter(ref)) if hyp_len and ref_len else 0
    if matches1 == 0:  # nltk returns 0 when no unigram matches (this covers an empty side)
        details.update(unigram_matches=0, bigram_matches=0, brevity_penalty=None)
        return 0.0, details
    bigrams_hyp = Counter(zip(hyp, hyp[1:], strict=False))
    bigrams_ref = Counter(zip(ref, ref[1:], strict=False))
    matches2 = _clipped_matches(bigrams_hyp, bigrams_ref)
    total1 = hyp_len
    total2 = max(1, hyp_len - 1)  # nltk: denominator at least 1
    p1 = matches1 / total1
    p2 = matches2 / total2 if matches2 else (0 + BLEU_SMOOTHING_EPSILON) / total2
    bp = 1 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    score = bp * math.exp(math.fsum((0.5 * math.log(p1), 0.5 * math.log(p2))))
    details.update(
        unigram_matches=matches1,
        unigram_total=total1,
        bigram_matches=matches2,
        bigram_total=total2,
        brevity_penalty=float(bp),
    )
    return score, details


def bleu_score(prediction: str, reference: str, *, case_sensitive: bool = False) -> float:
    """Sentence BLEU over 1- and 2-grams with brevity penalty and method1 smoothing (module docstring)."""
    return _bleu_texts(prediction, reference, case_sensitive)[0]


def _bleu_texts(prediction: str, reference: str, case_sensitive: bool) -> tuple[float, dict[str, Any]]:
    hyp = bleu_tokens(prediction, case_sensitive=case_sensitive)
    ref = bleu_tokens(reference, case_sensitive=case_sensitive)
    if not hyp and not ref:
        return (1.0 if _same_text(prediction, reference, case_sensitive) else 0.0), {
            "prediction_tokens": 0,
            "reference_tokens": 0,
            "no_tokens": True,
        }
    return _bleu(hyp, ref)


class BleuEvaluator(GradedEvaluator):
    """Sentence BLEU over 1- and 2-grams with brevity penalty; good for translation-shaped tasks.

    Equal to ``nltk`` ``sentence_bleu(weights=(0.5, 0.5), smoothing_function=method1)`` on the same
    tokens (module docstring).
    """

    name = "bleu"

    def _options(self) -> dict[str, object]:
        return {"max_order": 2, "smoothing": "nltk-method1-eps0.1", **super()._options()}

    def _score_sync(self, prediction: str, reference: Any, input: str) -> Scored:  # noqa: A002
        score, details = _bleu_texts(prediction, reference, self.case_sensitive)
        if details.get("no_tokens"):
            reasoning = f"Both texts are empty: {score:.4f}, threshold: {self.threshold:.4f}."
        elif details.get("brevity_penalty") is None:
            reasoning = (
                f"No output token appears in the reference: BLEU 0.0000, threshold: {self.threshold:.4f}."
            )
        else:
            reasoning = (
                f"BLEU-2 {score:.4f} (unigram precision "
                f"{details['unigram_matches']}/{details['unigram_total']}, "
                f"bigram precision {details['bigram_matches']}/{details['bigram_total']}, brevity penalty "
                f"{details['brevity_penalty']:.4f}), threshold: {self.threshold:.4f}."
            )
        return Scored(score=score, reasoning=reasoning, details=details)
