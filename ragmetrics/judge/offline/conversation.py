"""Offline answers for the conversation-level judgements: lexical stand-ins, every quote a real sentence.

- ``conversation.retention``: an assistant sentence states a number of a kind (number, year, percent,
  month) that the latest user sentence sharing a content word with it states differently.
- ``conversation.completeness``: a user sentence ending in ``?`` (or opening with "please") is a
  request; the later assistant sentence sharing the most of its content words (at least half) answers it.
- ``conversation.task``: the share of the goal's content words (framing verbs such as "learn" left
  out) found in the assistant's messages (not only the last: a closing "You're welcome!" hides
  nothing): at least two in five completed, some partially, none not; the best sentences as evidence.

Every quote is a sentence of the message it cites, so the replies always check out. These are
heuristics, not judgement: each reason says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragmetrics.text import content_tokens, extract_numbers, split_sentences, stems, tokenize

__all__ = ["COMPLETED_SHARE", "TASKS", "answer_conversation", "asks_something"]

_FRAMING = frozenset(
    stems(
        "learn know find out want get understand need tell ask wish like help able make sure whether".split()
    )
)
"""Words that frame a goal ("learn how long...") rather than say what it is about."""
COMPLETED_SHARE = 0.4
"""The share of the goal's content words the assistant's messages must hold for ``completed``."""
_ASKING = ("please ", "tell me", "show me", "can you", "could you", "would you")


def _words(text: str, *, numbers: bool = True) -> set[str]:
    tokens = content_tokens(tokenize(text))
    return {s for s in stems(tokens) if numbers or not any(ch.isdigit() for ch in s)}


def _messages(variables: Mapping[str, Any]) -> list[tuple[int, str, str]]:
    out: list[tuple[int, str, str]] = []
    for m in variables.get("messages") or []:
        if isinstance(m, Mapping):
            out.append((int(m.get("index", len(out))), str(m.get("role") or ""), str(m.get("content") or "")))
    return out


def _sentences(text: str) -> list[str]:
    return [s for s in split_sentences(text) if s.strip()]


def _retention(variables: Mapping[str, Any]) -> dict[str, Any]:
    stated: list[tuple[int, str, dict[str, set[str]], set[str]]] = []
    findings = []
    for index, role, content in _messages(variables):
        for sentence in _sentences(content):
            numbers: dict[str, set[str]] = {}
            for n in extract_numbers(sentence):
                numbers.setdefault(n.kind, set()).add(n.value)
            if not numbers:
                continue
            words = _words(sentence, numbers=False)
            if role == "user":
                stated.append((index, sentence, numbers, words))
                continue
            if role != "assistant":
                continue
            for user_index, user_sentence, user_numbers, user_words in reversed(stated):
                kinds = set(numbers) & set(user_numbers)
                if not (words & user_words) or not kinds:
                    continue
                if any(not (numbers[k] & user_numbers[k]) for k in kinds):
                    findings.append(
                        {
                            "message": index,
                            "claim": sentence,
                            "user_message": user_index,
                            "user_quote": user_sentence,
                            "kind": "contradicts",
                            "reason": "Offline heuristic: it states a different number about what the user "
                            "said.",
                        }
                    )
                break  # the latest statement on the subject is the one that holds
    return {"findings": findings}


def _is_request(sentence: str) -> bool:
    text = sentence.strip()
    return text.endswith(("?", "？")) or text.lower().startswith(_ASKING)


def asks_something(text: str) -> bool:
    """Whether ``text`` plainly asks for something: a sentence of it is a request by the rule above."""
    return any(_is_request(s) for s in _sentences(text))


def _completeness(variables: Mapping[str, Any]) -> dict[str, Any]:
    messages = _messages(variables)
    requests = []
    for index, role, content in messages:
        if role != "user":
            continue
        for sentence in _sentences(content):
            if not _is_request(sentence):
                continue
            wanted = _words(sentence)
            need = max(1, (len(wanted) + 1) // 2)
            best: tuple[int, int, str] | None = None
            for later, later_role, later_content in messages:
                if later <= index or later_role != "assistant":
                    continue
                for answer in _sentences(later_content):
                    shared = len(wanted & _words(answer))
                    if (shared >= need or not wanted) and (best is None or shared > best[0]):
                        best = (shared, later, answer)
            requests.append(
                {
                    "message": index,
                    "request": sentence,
                    "answered_by": None if best is None else best[1],
                    "answer_quote": "" if best is None else best[2],
                    "reason": "Offline heuristic: "
                    + (
                        "no later assistant sentence shares half of its content words."
                        if best is None
                        else f"the answer shares {best[0]} of its {len(wanted)} content words."
                    ),
                }
            )
    return {"requests": requests}


def _task(variables: Mapping[str, Any]) -> dict[str, Any]:
    answers = [(i, c) for i, r, c in _messages(variables) if r == "assistant" and c.strip()]
    if not answers:
        return {
            "verdict": "not",
            "evidence": [],
            "reason": "Offline heuristic: the assistant never answered.",
        }
    wanted = _words(str(variables.get("goal") or "")) - _FRAMING
    found: set[str] = set()
    scored = []
    for index, content in answers:
        for k, sentence in enumerate(_sentences(content)):
            words = wanted & _words(sentence)
            found |= words
            scored.append((-len(words), index, k, sentence))
    share = len(found) / len(wanted) if wanted else 1.0
    verdict = "completed" if share >= COMPLETED_SHARE else "partially" if share > 0 else "not"
    scored.sort()
    evidence = [{"message": i, "quote": s} for shared, i, _, s in scored[:3] if shared or not wanted]
    return {
        "verdict": verdict,
        "evidence": evidence if verdict != "not" else [],
        "reason": f"Offline heuristic: the assistant's messages hold {len(found)} of the goal's "
        f"{len(wanted)} content words.",
    }


TASKS = {
    "conversation.retention": _retention,
    "conversation.completeness": _completeness,
    "conversation.task": _task,
}
"""Conversation-level task -> its offline answer."""


def answer_conversation(task: str, variables: Mapping[str, Any]) -> dict[str, Any] | None:
    """The offline answer to a conversation-level task, or None if the task is not one of :data:`TASKS`."""
    handler = TASKS.get(task)
    return None if handler is None else handler(variables)
