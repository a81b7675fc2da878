"""The internals of :class:`ragmetrics.testing.FakeLLMServer` (import the public names from there).

- ``transport``: the loopback HTTP server and its connection handler;
- ``wire``: what the OpenAI and Anthropic wire formats share (the request summary ``Call``, the
  ``Answer`` a reply is built from, JSON and token helpers), with ``openai_wire`` and
  ``anthropic_wire`` for each provider's shapes, ``providers`` choosing between them by endpoint,
  and ``embeddings`` for ``/v1/embeddings``;
- ``records``: the scripting values (``FakeReply``, ``FakeRequest``, ``FakeRule``);
- ``tasks``: which ragmetrics task a request's response schema stands for, and its variables;
- ``schema_fill``: an arbitrary instance of a JSON schema (the ``answer="schema"`` mode);
- ``placeholder``: a JSON schema filled with fixed placeholders (the ``answer="placeholder"`` mode);
- ``dialects``: how a real OpenAI-compatible server departs from OpenAI (``dialect="llama-cpp"``);
- ``batches``: the OpenAI Batch API and Anthropic Message Batches (state, progression, answering each
  request as in real time), with ``batch_wire`` for their records and JSON shapes;
- ``serving``: how the server answers one request.
"""
