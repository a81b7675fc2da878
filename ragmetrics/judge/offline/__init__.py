"""The offline judge: a deterministic lexical heuristic, its claim splitter, support scorer and text tools.

It needs no key and no network, and says in every result that it is a heuristic. The modules:
``judge`` (the :class:`~ragmetrics.judge.offline.judge.OfflineJudge`), ``claims`` (sentence-level
claims), ``support`` (support features and verdicts), ``grading`` (rubric and relevance tasks) and
``text`` (tokenising, stemming, normalising).
"""
