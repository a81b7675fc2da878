"""``ragmetrics.judge.resolve``: every form ``llm=`` takes, the memo, each refusal, and that it is alone.

Real objects throughout: the async openai / anthropic SDK clients (never called here), LangChain's and
LlamaIndex's own fake models, the offline judge.
"""

from __future__ import annotations

import ast
import asyncio
import functools
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import ragmetrics
from ragmetrics import FaithfulnessMetric, OfflineJudgeWarning, RelevancyMetric
from ragmetrics.errors import ConfigError
from ragmetrics.judge import CachingJudge, make_judge, resolve_judge
from ragmetrics.judge.offline.judge import OfflineJudge
from ragmetrics.judge.resolve import LazyJudge, llm_form
from ragmetrics.metrics.evaluators.factory import LLMJudgeEvaluator

PACKAGE = Path(ragmetrics.__file__).parent
URL = "http://127.0.0.1:9/v1"  # nothing listens there; nothing here calls it


def _openai() -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="k" * 12, base_url=URL, max_retries=0)


def _closed(*clients: Any) -> None:
    async def close() -> None:
        for client in clients:
            await client.close()

    asyncio.run(close())


def _langchain() -> Any:
    fakes = pytest.importorskip("langchain_core.language_models")
    return fakes.FakeListChatModel(responses=["{}"])


def _llamaindex() -> Any:
    llms = pytest.importorskip("llama_index.core.llms")
    return llms.MockLLM()


# -- each accepted form --------------------------------------------------------------------------------


def test_a_spec_string_builds_an_owned_caching_judge() -> None:
    judge = resolve_judge("offline", cache=False)
    assert isinstance(judge, CachingJudge) and isinstance(judge.inner, OfflineJudge)
    assert judge.owns_inner and judge.info.spec == "offline"
    assert llm_form("offline") == "spec"


def test_a_spec_with_a_base_url_reaches_that_url() -> None:
    judge = resolve_judge(f"openai:gpt-4o-mini@{URL}", api_key="k" * 12, cache=False)
    assert judge.info.provider == "openai" and judge.info.model == "gpt-4o-mini"
    assert judge.info.base_url == URL and judge.owns_inner
    same = resolve_judge("openai:gpt-4o-mini", base_url=URL, api_key="k" * 12, cache=False)
    assert same.info.spec == judge.info.spec


def test_none_is_the_default_judge_offline_with_a_warning_when_nothing_is_configured() -> None:
    with pytest.warns(OfflineJudgeWarning, match="no judge configured"):
        judge = resolve_judge(None, cache=False)
    assert isinstance(judge.inner, OfflineJudge)
    assert llm_form(None) == "spec"


def test_a_judge_is_wrapped_and_never_owned_a_caching_judge_is_returned_as_it_is() -> None:
    offline = OfflineJudge()
    judge = resolve_judge(offline, cache=False)
    assert judge.inner is offline and not judge.owns_inner
    assert resolve_judge(judge) is judge
    assert llm_form(offline) == llm_form(judge) == "judge"


@pytest.mark.parametrize(
    ("make", "provider"),
    [
        (_openai, "openai"),
        (lambda: anthropic.AsyncAnthropic(api_key="k" * 12, base_url="http://127.0.0.1:9"), "anthropic"),
    ],
)
def test_an_async_sdk_client_becomes_a_provider_judge(make: Any, provider: str) -> None:
    client = make()
    judge = resolve_judge(client, cache=False)
    assert judge.info.provider == provider and judge.owns_inner  # our per-loop copy, not the client
    assert llm_form(client) == "client"
    assert resolve_judge(client, model="m-1", cache=False).info.model == "m-1"
    _closed(client)


@pytest.mark.parametrize(("make", "kind"), [(_langchain, "langchain"), (_llamaindex, "llamaindex")])
def test_a_framework_model_becomes_a_framework_judge(make: Any, kind: str) -> None:
    llm = make()
    judge = resolve_judge(llm, cache=False, max_concurrency=3)
    assert judge.info.provider == kind and not judge.owns_inner
    assert judge.inner.max_concurrency == 3  # type: ignore[attr-defined]
    assert llm_form(llm) == "framework"


# -- the memo ------------------------------------------------------------------------------------------


def test_a_lazy_judge_checks_at_once_builds_on_first_use_and_then_keeps_it() -> None:
    lazy = LazyJudge("openai:gpt-4o-mini", owner="M", cache=False)  # no key set: nothing is built yet
    assert lazy.resolved is None and lazy.spec == "openai:gpt-4o-mini"
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        lazy.judge  # noqa: B018 - resolving is when the key is looked up
    offline = LazyJudge("offline", owner="M", cache=False)
    assert offline.judge is offline.judge is offline.resolved
    shared = resolve_judge("offline", cache=False)
    offline.use(shared)
    assert offline.judge is shared
    with pytest.raises(ConfigError, match="temperature"):
        LazyJudge("offline", owner="M", temperature=9)


def test_a_metric_resolves_once_and_equal_judges_share_a_key() -> None:
    metric = FaithfulnessMetric(llm="offline", cache=False)
    assert metric.judge is metric.judge
    assert metric.judge_key() == RelevancyMetric(llm="offline", cache=False).judge_key()
    assert metric.judge_key() != RelevancyMetric(llm="offline", cache=True).judge_key()
    one, two = _openai(), _openai()
    assert FaithfulnessMetric(llm=one).judge_key() == RelevancyMetric(llm=one).judge_key()
    assert FaithfulnessMetric(llm=one).judge_key() != FaithfulnessMetric(llm=two).judge_key()
    _closed(one, two)


def test_the_api_key_is_kept_out_of_the_key_and_the_repr() -> None:
    lazy = LazyJudge("openai:gpt-4o-mini", owner="M", api_key="sk-secret-123456", cache=False)
    assert "sk-secret-123456" not in repr(lazy.key()) + repr(vars(lazy).get("_options"))


# -- each refusal, written once ------------------------------------------------------------------------

ASYNC_CLIENTS = "(AsyncOpenAI, AsyncAzureOpenAI, AsyncAnthropic, AsyncAnthropicBedrock, AsyncAnthropicVertex)"
REFUSALS: list[tuple[str, Any, dict[str, Any], str]] = [  # (id, make llm, keywords, message after "owner: ")
    (
        "no accepted form",
        lambda: 42,
        {},
        f"llm must be a judge spec string, a Judge, an async openai / anthropic client {ASYNC_CLIENTS}, "
        "a LangChain chat model or a LlamaIndex LLM, got int",
    ),
    (
        "a synchronous client",
        lambda: openai.OpenAI(api_key="k" * 12, base_url=URL),
        {},
        "llm is a synchronous OpenAI client; pass its async twin (AsyncOpenAI) with the same arguments",
    ),
    (
        "keywords on a Judge",
        OfflineJudge,
        {"api_key": "k", "model": "m"},
        "llm is a ready Judge (OfflineJudge); api_key, model cannot be applied to it (configure the judge "
        "itself)",
    ),
    (
        "keywords on a framework model",
        _llamaindex,
        {"base_url": URL},
        "a MockLLM carries its own key, URL and model; base_url cannot be applied to it (set them when "
        "creating it)",
    ),
    (
        "a key on a client",
        _openai,
        {"api_key": "k"},
        "a AsyncOpenAI client carries its own key and URL; set api_key / base_url when creating the client",
    ),
    (
        "a model with a spec",
        lambda: "openai:gpt-4o",
        {"model": "gpt-4o-mini"},
        "model= goes with a client object; a spec string names the model ('openai:MODEL')",
    ),
    (
        "a key that is no string",
        lambda: "openai:gpt-4o",
        {"api_key": 123},
        "api_key must be a string, got int",
    ),
]


@pytest.mark.parametrize(
    ("make", "keywords", "message"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS]
)
@pytest.mark.parametrize(
    ("owner", "check"),
    [
        ("resolve_judge()", lambda llm, kw: resolve_judge(llm, cache=False, **kw)),
        ("FaithfulnessMetric", lambda llm, kw: FaithfulnessMetric(llm=llm, **kw)),
        ("llm_judge", lambda llm, kw: LLMJudgeEvaluator(llm=llm, **kw)),
    ],
    ids=["resolve_judge", "metric", "evaluator"],
)
def test_each_refusal_names_the_owner_and_the_value(
    make: Any, keywords: dict[str, Any], message: str, owner: str, check: Any
) -> None:
    llm = make()
    with pytest.raises(ConfigError) as info:
        check(llm, keywords)
    assert str(info.value) == f"{owner}: {message}"
    if isinstance(llm, openai.AsyncOpenAI):
        _closed(llm)
    elif isinstance(llm, openai.OpenAI):
        llm.close()


def test_the_spec_keywords_are_checked_where_a_spec_is_built() -> None:
    with pytest.raises(ConfigError, match="names a base URL already"):
        make_judge(f"openai:m@{URL}", base_url="http://elsewhere.example/v1", api_key="k" * 12)
    with pytest.raises(ConfigError, match="base_url must be an http"):
        resolve_judge("openai:m", base_url="ftp://x", api_key="k" * 12)
    with pytest.raises(ConfigError, match="unknown judge spec"):
        FaithfulnessMetric(llm="gpt4")


# -- the only classifier ---------------------------------------------------------------------------------

FRAGMENTS = (
    "llm must be a judge spec string, a Judge",  # evaluate_ray() takes spec strings only: its own rule
    "is a ready Judge",
    "carries its own key",
    "model= goes with a client object",
    "pass its async twin",
    "is not an async openai",
    "is not a LangChain chat model",
)
CLASSIFIERS = {"client_provider", "async_twin", "framework_kind"}
"""The provider modules' recognisers: called by resolve.py, and inside their own modules only."""


@functools.cache
def _sources() -> list[tuple[str, ast.AST]]:
    return [(str(p.relative_to(PACKAGE.parent)), ast.parse(p.read_text())) for p in PACKAGE.rglob("*.py")]


def test_the_llm_refusals_are_written_in_resolve_only() -> None:
    where: dict[str, set[str]] = {f: set() for f in FRAGMENTS}
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for fragment in FRAGMENTS:
                    if fragment in node.value:
                        where[fragment].add(path)
    written = {f: paths for f, paths in where.items() if paths}
    assert set(written) == set(FRAGMENTS[:5])  # the last two were second classifiers, now gone
    assert all(paths == {"ragmetrics/judge/resolve.py"} for paths in written.values()), written


def test_no_module_but_resolve_classifies_an_llm() -> None:
    allowed = {
        "ragmetrics/judge/resolve.py",
        "ragmetrics/judge/providers/clients.py",
        "ragmetrics/judge/providers/frameworks.py",
    }
    callers = set()
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                types = ast.unparse(node.args[1]) if name == "isinstance" and len(node.args) == 2 else ""
                if name in CLASSIFIERS or "Judge" in types.strip("()").replace(" ", "").split(","):
                    callers.add(path)
    assert callers - allowed == set(), "classify llm in ragmetrics/judge/resolve.py only"
