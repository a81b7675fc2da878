"""ragmetrics."""
