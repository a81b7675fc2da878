"""Values the hand-written type checks let through before the shared validators (ragmetrics/_check.py)."""

from __future__ import annotations

import pytest

from ragmetrics.errors import InvalidInputError
from ragmetrics.pipeline import EvaluationPipeline
from ragmetrics.sample import Sample


def test_a_bool_id_is_not_an_integer_id():
    # before: isinstance(True, (str, int)) let it through and the sample's id became "True"
    with pytest.raises(InvalidInputError, match="field 'id' must be a string or an integer, got bool True"):
        Sample.from_fields(answer="a", id=True)


def test_a_bool_id_in_a_batch_is_that_row_s_invalid_input():
    results = EvaluationPipeline(["exact_match"], progress=False).run(
        [{"id": False, "answer": "a", "reference": "a"}, {"id": 7, "answer": "a", "reference": "a"}]
    )
    (error,) = results[0].errors
    assert error.status == "invalid_input" and error.field == "id"
    assert results[1].id == "7" and results[1].scores["exact_match"] == 1.0
