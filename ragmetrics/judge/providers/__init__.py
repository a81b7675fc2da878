"""Provider adapters: the OpenAI-compatible and Anthropic judges, SDK clients, and the instructor glue.

Nothing here is imported by ``import ragmetrics``: :func:`ragmetrics.judge.make_judge` imports a
provider module only when a provider judge is built, and the modules import their SDK only at the
first call.
"""
