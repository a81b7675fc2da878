"""The internals of :class:`ragmetrics.testing.FakeLLMServer` (import the public names from there).

``transport`` (the loopback HTTP server), ``wire`` with ``openai_wire``, ``anthropic_wire``,
``providers`` and ``embeddings`` (the wire formats), ``records`` (``FakeReply``, ``FakeRequest``,
``FakeRule``), ``tasks`` (which ragmetrics task a response schema stands for), ``schema_fill`` and
``placeholder`` (the ``answer="schema"`` / ``"placeholder"`` modes), ``dialects``
(``dialect="llama-cpp"``), ``batches`` with ``batch_wire`` (the providers' batch APIs) and ``serving``
(how the server answers one request).
"""
