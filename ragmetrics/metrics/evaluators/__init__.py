"""The classic evaluators (text, overlap, structured, embedding, rubric, custom) and their factory.

``factory`` builds one from a config mapping and re-exports every evaluator class; it is what the
documented import path :mod:`ragmetrics.evaluation` serves.
"""
