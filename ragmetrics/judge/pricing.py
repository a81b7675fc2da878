"""Model prices: a data file (``ragmetrics/prices.json``), overridable, turned into USD per call.

The table holds real-time prices per provider (``openai``, ``anthropic``) and the providers' batch
API prices beside them (``openai-batch``, ``anthropic-batch``: half the real-time price, as both the
OpenAI Batch API and Anthropic's Message Batches bill). :func:`batch_cost_usd` prices a call made
through a batch; a model that only the real-time table names is billed at half its real-time price.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path

from ragmetrics.errors import ConfigError

__all__ = ["BATCH_DISCOUNT", "PriceTable", "batch_cost_usd", "batch_table", "cost_usd", "load_prices"]

BATCH_DISCOUNT = 0.5
"""What a batch call costs relative to the same call in real time, for models the batch tables omit."""

PriceTable = Mapping[str, Mapping[str, tuple[float, float]]]


@cache
def _bundled() -> dict[str, dict[str, tuple[float, float]]]:
    raw = json.loads((resources.files("ragmetrics") / "prices.json").read_text(encoding="utf-8"))
    return {
        p: {m: (float(v[0]), float(v[1])) for m, v in models.items()}
        for p, models in raw.items()
        if not p.startswith("_")
    }


def load_prices(path: str | Path | None = None) -> dict[str, dict[str, tuple[float, float]]]:
    """The bundled price table, updated by a JSON file of the same shape when ``path`` is given.

    Raises:
        ConfigError: The override file cannot be read or has the wrong shape.
    """
    table = {p: dict(m) for p, m in _bundled().items()}
    if path is None:
        return table
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        for provider, models in raw.items():
            if provider.startswith("_"):
                continue
            for model, (inp, out) in models.items():
                table.setdefault(provider, {})[model] = (float(inp), float(out))
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise ConfigError(
            f"price file {path}: expected "
            f"{{provider: {{model: [input_usd_per_mtok, output_usd_per_mtok]}}}}: {exc}"
        ) from exc
    return table


def cost_usd(
    table: PriceTable, provider: str, model: str, prompt_tokens: int, completion_tokens: int
) -> float:
    """Cost of one call; 0.0 for models not in the table (local servers, the offline judge)."""
    models = table.get(provider, {})
    best = max((name for name in models if model.startswith(name)), key=len, default=None)
    if best is None:
        return 0.0
    inp, out = models[best]
    return (prompt_tokens * inp + completion_tokens * out) / 1_000_000


def batch_table(provider: str) -> str:
    """The name of ``provider``'s batch price table in the price file (``openai`` -> ``openai-batch``)."""
    return f"{provider}-batch"


def batch_cost_usd(
    table: PriceTable, provider: str, model: str, prompt_tokens: int, completion_tokens: int
) -> float:
    """Cost of one call made through the provider's batch API.

    The ``PROVIDER-batch`` table's price when it names the model (longest prefix), else
    :data:`BATCH_DISCOUNT` times the real-time price; 0.0 for models in neither table.
    """
    name = batch_table(provider)
    models = table.get(name, {})
    if any(model.startswith(m) for m in models):
        return cost_usd(table, name, model, prompt_tokens, completion_tokens)
    return BATCH_DISCOUNT * cost_usd(table, provider, model, prompt_tokens, completion_tokens)
