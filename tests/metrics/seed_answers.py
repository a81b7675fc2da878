"""What a careful human judge answers for the reference document's three examples."""

PYTHON_Q = "What is Python?"
PYTHON_A = "Python is a compiled language created in 1991."
PYTHON_CTX = ["Python is an interpreted language created by Guido van Rossum in 1991."]
PYTHON_EXTRACT = {
    "claims": [
        {
            "text": "Python is a compiled language.",
            "span": "Python is a compiled language",
            "relevance": "direct",
        },
        {"text": "Python was created in 1991.", "span": "created in 1991", "relevance": "direct"},
    ],
    "addresses_question": "yes",
}
PYTHON_VERIFY = {
    "verdicts": [
        {
            "claim": 0,
            "verdict": "contradicted",
            "context": 0,
            "evidence": "Python is an interpreted language",
            "reason": "The context says interpreted, not compiled.",
        },
        {
            "claim": 1,
            "verdict": "supported",
            "context": 0,
            "evidence": "created by Guido van Rossum in 1991",
            "reason": "The context gives 1991.",
        },
    ]
}

PARIS_Q = "What is the capital of France?"
PARIS_A = "Paris is the capital and largest city of France."
PARIS_EXTRACT = {
    "claims": [
        {"text": "Paris is the capital of France.", "span": "Paris is the capital", "relevance": "direct"},
        {
            "text": "Paris is the largest city of France.",
            "span": "largest city of France",
            "relevance": "supporting",
        },
    ],
    "addresses_question": "yes",
}

SK_A = "SynapseKit supports 31 LLM providers."
SK_CTX = ["SynapseKit supports 31 LLM providers including OpenAI, Anthropic, and Gemini."]
SK_EXTRACT = {
    "claims": [{"text": "SynapseKit supports 31 LLM providers.", "span": SK_A, "relevance": "direct"}],
    "addresses_question": "yes",
}
SK_VERIFY = {
    "verdicts": [
        {
            "claim": 0,
            "verdict": "supported",
            "context": 0,
            "evidence": "SynapseKit supports 31 LLM providers",
            "reason": "Stated verbatim.",
        }
    ]
}
