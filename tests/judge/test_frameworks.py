"""LangChain chat models and LlamaIndex LLMs as ``llm=``, over real HTTP to the fake LLM server.

With langchain-openai's ``ChatOpenAI`` and llama-index's ``OpenAILike`` when installed (the test extra
has langchain-openai), and always with a small LlamaIndex ``CustomLLM`` that calls the fake server
through the real openai SDK (a model without function calling: the JSON-in-the-prompt path).
"""

from __future__ import annotations

from typing import Any

import pytest

import ragmetrics
from ragmetrics import ConfigError
from ragmetrics.testing import FakeLLMServer

QUESTION = "What is Python?"
ANSWER = "Python is a compiled language created in 1991."
CONTEXTS = ["Python is an interpreted language created by Guido van Rossum in 1991."]
ROWS = [{"id": "py", "question": QUESTION, "answer": ANSWER, "contexts": CONTEXTS}]


def _check_one_call(llm: Any, srv: FakeLLMServer, provider: str) -> None:
    result = ragmetrics.FaithfulnessMetric(llm=llm, cache=False).evaluate_sync(
        question=QUESTION, answer=ANSWER, contexts=CONTEXTS
    )
    assert result.status == "ok" and result.score == 0.5  # the seed example
    assert result.usage.calls == len(srv.requests) == 2 and result.usage.succeeded == 2
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0  # as the object reported
    assert result.judge is not None and result.judge.provider == provider
    assert result.judge.model == "gpt-4o-mini"


def test_a_langchain_chat_model_is_a_judge(fake_llm_server: FakeLLMServer) -> None:
    langchain_openai = pytest.importorskip("langchain_openai")
    llm = langchain_openai.ChatOpenAI(
        model="gpt-4o-mini", base_url=fake_llm_server.openai_base_url, api_key="k", max_retries=0
    )
    _check_one_call(llm, fake_llm_server, "langchain")
    assert {r.schema for r in fake_llm_server.requests} == {"ClaimExtraction", "ClaimVerification"}
    fake_llm_server.reset()
    results = ragmetrics.evaluate_sync(
        ROWS,
        metrics=["faithfulness", "relevancy", "groundedness"],
        llm=llm,
        cache=False,
        progress=False,
        canaries=False,  # the count below is the dataset's calls alone
    )
    assert results[0].ok and fake_llm_server.calls.total() == 2  # one judge shared by the three metrics
    assert results[0].usage.calls == 2 and results[0].usage.prompt_tokens > 0


def test_a_ragas_wrapper_is_unwrapped(fake_llm_server: FakeLLMServer) -> None:
    langchain_openai = pytest.importorskip("langchain_openai")

    class LangchainLLMWrapper:  # as ragas.llms.base names it (ragas itself is not a test dependency)
        __module__ = "ragas.llms.base"

        def __init__(self, langchain_llm: Any) -> None:
            self.langchain_llm = langchain_llm

    llm = langchain_openai.ChatOpenAI(
        model="gpt-4o-mini", base_url=fake_llm_server.openai_base_url, api_key="k", max_retries=0
    )
    _check_one_call(LangchainLLMWrapper(llm), fake_llm_server, "langchain")


@pytest.mark.parametrize("function_calling", [True, False])
def test_a_llamaindex_openai_like_llm_is_a_judge(
    fake_llm_server: FakeLLMServer, function_calling: bool
) -> None:
    openai_like = pytest.importorskip("llama_index.llms.openai_like")
    llm = openai_like.OpenAILike(
        model="gpt-4o-mini",
        api_base=fake_llm_server.openai_base_url,
        api_key="k",
        is_chat_model=True,
        is_function_calling_model=function_calling,
        max_retries=0,
    )
    _check_one_call(llm, fake_llm_server, "llamaindex")
    modes = {r.mode for r in fake_llm_server.requests}
    assert modes == ({"tools"} if function_calling else {"text"})


def _custom_llm(base_url: str) -> Any:
    pytest.importorskip("llama_index.core")
    import openai
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata

    class ServerLLM(CustomLLM):  # a user's own LlamaIndex LLM: no function calling
        model_name: str = "gpt-4o-mini"

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name=self.model_name)

        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            with openai.OpenAI(base_url=base_url, api_key="k", max_retries=0) as client:
                reply = client.chat.completions.create(
                    model=self.model_name, messages=[{"role": "user", "content": prompt}]
                )
            return CompletionResponse(text=reply.choices[0].message.content or "", raw=reply)

        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise NotImplementedError

    return ServerLLM()


def test_a_llamaindex_custom_llm_is_a_judge(fake_llm_server: FakeLLMServer) -> None:
    _check_one_call(_custom_llm(fake_llm_server.openai_base_url), fake_llm_server, "llamaindex")


def test_invalid_output_is_re_asked_then_reported(fake_llm_server: FakeLLMServer) -> None:
    from ragmetrics.testing import FakeReply

    fake_llm_server.enqueue(FakeReply(content="not json"), FakeReply(content="{}"), FakeReply(content="no"))
    llm = _custom_llm(fake_llm_server.openai_base_url)
    result = ragmetrics.FaithfulnessMetric(llm=llm, cache=False, reasks=2).evaluate_sync(
        question=QUESTION, answer=ANSWER, contexts=CONTEXTS
    )
    assert result.status == "judge_output_invalid" and result.score is None
    assert result.usage.calls == 3 and result.usage.reasks == 2


def test_keys_and_urls_go_on_the_object(fake_llm_server: FakeLLMServer) -> None:
    llm = _custom_llm(fake_llm_server.openai_base_url)
    with pytest.raises(ConfigError, match="carries its own key, URL and model; api_key"):
        ragmetrics.FaithfulnessMetric(llm=llm, api_key="k")
    with pytest.raises(ConfigError, match="carries its own temperature"):
        ragmetrics.FaithfulnessMetric(llm=llm, temperature=0.5).judge  # noqa: B018 - resolves the judge
    with pytest.raises(ConfigError, match="a LangChain chat model or a LlamaIndex LLM, got object"):
        ragmetrics.FaithfulnessMetric(llm=object())
