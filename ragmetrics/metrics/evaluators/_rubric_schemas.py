"""Response schemas of the model-graded evaluators (llm_judge, llm_rubric, g_eval), and rating parsing.

Descriptions stay short: they travel in every request's schema. :class:`JudgeReplyText` validates that a
free-text reply holds a 0-10 rating, so instructor re-asks when it does not and the cache never keeps
such a reply.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field, field_validator, model_validator

from ragmetrics.judge.schema import JudgeText

__all__ = ["EvaluationSteps", "GEvalGrade", "JudgeRating", "JudgeReplyText", "RubricGrade", "parse_rating"]


class JudgeRating(BaseModel):
    """llm_judge's structured rating (default prompt)."""

    reasoning: JudgeText = Field(description="One or two sentences.")
    """Why this rating."""
    score: float = Field(ge=0, le=10, description="0 (wrong) to 10 (perfect).")
    """The rating on the 0-10 scale."""


_MARKED = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*(?:/|out of)\s*10(?!\.?\d)", re.IGNORECASE)
_SCALE = re.compile(
    r"\b(?:out\s+of|of|to)\s+10(?:\.0+)?(?!\.?\d)|(?<![\d.])0\s*(?:-|\u2013|to)\s*10(?!\.?\d)", re.IGNORECASE
)
_NUMBER = re.compile(r"(?<![\d.])-?\d+(?:\.\d+)?(?!\.?\d)")


def parse_rating(text: str) -> float | None:
    """The 0-10 rating in a free-text reply, or None.

    ``N/10`` and ``N out of 10`` win; otherwise, once mentions of the scale itself (``out of 10``,
    ``0 to 10``) are set aside, the first number between 0 and 10.
    """
    marked = _MARKED.search(text)
    if marked and 0 <= float(marked.group(1)) <= 10:
        return float(marked.group(1))
    for match in _NUMBER.finditer(_SCALE.sub(" ", text)):
        value = float(match.group(0))
        if 0 <= value <= 10:
            return value
    return None


class JudgeReplyText(BaseModel):
    """llm_judge's free-text reply to a custom prompt template."""

    reply: str = Field(description="Your complete reply, worded as the instructions ask.")
    """The judge's reply; it must hold a rating between 0 and 10."""

    @model_validator(mode="after")
    def _has_rating(self) -> JudgeReplyText:
        if parse_rating(self.reply) is None:
            raise ValueError("the reply holds no number between 0 and 10: reply with a rating from 0 to 10")
        return self


class RubricGrade(BaseModel):
    """llm_rubric's verdict."""

    reason: JudgeText = Field(description="One or two sentences.")
    """What satisfies or violates the rubric."""
    passed: bool = Field(description="True if the output satisfies the rubric.")
    """The judge's verdict."""
    score: float = Field(ge=0, le=1, description="How fully it satisfies the rubric, 0 to 1.")
    """How fully the output satisfies the rubric."""


class EvaluationSteps(BaseModel):
    """g_eval's evaluation steps derived from the criteria."""

    steps: list[JudgeText] = Field(min_length=1, description="3 to 8 short, concrete steps, in order.")
    """The steps, in order."""

    @field_validator("steps")
    @classmethod
    def _non_empty(cls, steps: list[str]) -> list[str]:
        kept = [s.strip() for s in steps if s.strip()]
        if not kept:
            raise ValueError("give at least one evaluation step")
        return kept


class GEvalGrade(BaseModel):
    """g_eval's grade."""

    reason: JudgeText = Field(description="Two or three sentences.")
    """What the steps found."""
    score: int = Field(ge=0, le=10, description="0 (fails the criteria) to 10 (meets them fully).")
    """The grade on the 0-10 scale."""
    passed: bool = Field(description="True if the output meets the criteria.")
    """The judge's verdict."""
