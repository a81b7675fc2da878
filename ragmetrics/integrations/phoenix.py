"""The old import path of the Phoenix export: it lives in :mod:`ragmetrics.observe.phoenix_export`."""

from ragmetrics.observe.phoenix_export import export_phoenix, span_annotations

__all__ = ["export_phoenix", "span_annotations"]
