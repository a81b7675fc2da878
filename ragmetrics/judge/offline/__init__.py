"""The offline judge: a deterministic lexical heuristic, its claim splitter and support scorer.

It needs no key and no network, and says in every result that it is a heuristic. The modules:
``judge`` (the :class:`~ragmetrics.judge.offline.judge.OfflineJudge`), ``claims`` (sentence-level
claims), ``support`` (support features and verdicts), ``grading`` (rubric and relevance tasks),
``retrieval`` (context relevance) and ``per_context``; its text tools are :mod:`ragmetrics.text`.
"""
