"""What a suite file may name (issue 22, items 2 and 3): judge hosts, cache folders, cost settings.

The attacker is a second fake server: a suite that names it must not reach it (0 requests, so no
key), unless the user allows it; then the same suite does reach it, so the refusal is what kept it away.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragmetrics import ConfigError
from ragmetrics.cli.app import main
from ragmetrics.regression.suite import Suite, run_suite
from ragmetrics.testing import FakeLLMServer

pytest_plugins = ["pytester"]

CASE = {"id": "c1", "input": "What is the capital of France?", "output": "Paris.", "expected": "Paris"}


@pytest.fixture(scope="module")
def attacker() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def evil(attacker: FakeLLMServer, dummy_keys: None) -> Iterator[FakeLLMServer]:
    attacker.reset()
    yield attacker
    attacker.reset()


def suite_file(tmp_path: Path, data: dict[str, object], name: str = "suite.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")  # JSON is YAML
    return path


def rubric_suite(llm: str) -> dict[str, object]:
    return {"llm": llm, "cases": [{**CASE, "evaluators": [{"type": "llm_rubric", "value": "Names Paris"}]}]}


def run_cli(tmp_path: Path, *args: str) -> tuple[int, dict[str, object]]:
    out = tmp_path / "run.json"
    code = main(["test", *args, "--json", str(out)])
    return code, json.loads(out.read_text())


def test_a_suite_naming_another_host_never_reaches_it_unless_allowed(tmp_path, evil, capsys):
    path = suite_file(tmp_path, rubric_suite(f"openai:gpt-4o-mini@{evil.openai_base_url}"))
    code, run = run_cli(tmp_path, str(path))
    assert code == 1
    (case,) = run["cases"]
    assert case["outcome"] == "error"
    assert "127.0.0.1" in case["error"] and "--allow-judge-url" in case["error"]
    assert "OPENAI_BASE_URL" in case["error"]
    assert evil.requests == []  # nothing sent, so no key

    code, run = run_cli(tmp_path, str(path), "--allow-judge-url")
    assert run["cases"][0]["outcome"] != "error", run["cases"][0]
    assert evil.calls.total() >= 1 and all(r.has_api_key for r in evil.requests)


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "faithfulness", "llm": "anthropic:claude-haiku-4-5@{url}"},
        {"type": "llm_judge", "llm": "gemini:gemini-2.5-flash@{url}"},
        {"type": "llm_rubric", "value": "x", "llm": "azure:dep@{url}"},
        {"type": "g_eval", "criteria": "x", "llm": "bedrock:anthropic.claude@{url}"},
        {"type": "faithfulness", "llm": "openai:gpt-4o-mini", "base_url": "{url}"},
        {"type": "cosine_similarity", "embeddings": "openai:text-embedding-3-small@{url}"},
        {"type": "faithfulness", "llm": "openai:gpt-4o-mini@https://api.openai.com@{host}/v1"},
        {"type": "faithfulness", "llm": "vertex:claude@https://evil.us-aiplatform.googleapis.com"},
    ],
    ids=["anthropic", "gemini", "azure", "bedrock", "base_url", "embeddings", "userinfo", "subdomain"],
)
def test_every_provider_and_form_of_naming_a_host_is_refused(entry, evil):
    url, host = evil.url, evil.url.split("//", 1)[1]
    raw = {k: v.format(url=url, host=host) if isinstance(v, str) else v for k, v in entry.items()}
    data = {"cases": [{**CASE, "contexts": ["Paris is the capital."], "evaluators": [raw]}]}
    with pytest.raises(ConfigError, match=r"suite.yaml: cases\[0\]\.evaluators\[0\]: .*--allow-judge-url"):
        Suite.from_data(data, source="suite.yaml")
    for where in ("llm", "embeddings"):
        spec = f"openai:m@{url}" if where == "llm" else f"openai:text-embedding-3-small@{url}"
        with pytest.raises(ConfigError, match="suite.yaml: .*a suite file may not choose where a key goes"):
            Suite.from_data(
                {where: spec, "cases": [{**CASE, "evaluators": ["exact_match"]}]}, source="suite.yaml"
            )
    assert evil.requests == []
    assert Suite.from_data(data, allow_judge_url=True).cases  # allowed: it loads


@pytest.mark.parametrize(
    "spec",
    [
        "openai:gpt-4o-mini@https://api.openai.com/v1",
        "anthropic:claude-haiku-4-5@https://api.anthropic.com",
        "gemini:gemini-2.5-flash@https://generativelanguage.googleapis.com/v1beta/openai/",
        "bedrock:anthropic.claude@https://bedrock-runtime.us-east-1.amazonaws.com",
        "vertex:claude@https://us-east5-aiplatform.googleapis.com",
        "openai:gpt-4o-mini",
        "offline",
    ],
)
def test_the_providers_own_hosts_are_allowed(spec):
    assert Suite.from_data(rubric_suite(spec)).cases


def test_a_base_url_the_user_configured_is_allowed(evil, monkeypatch, tmp_path):
    spec = f"openai:gpt-4o-mini@{evil.openai_base_url}"
    with pytest.raises(ConfigError):
        Suite.from_data(rubric_suite(spec))
    assert Suite.from_data(rubric_suite(spec), llm=spec).cases  # given in Python
    monkeypatch.setenv("RAGMETRICS_JUDGE", f"openai:other@{evil.url}/v1/")  # same scheme, host and port
    assert Suite.from_data(rubric_suite(spec)).cases
    monkeypatch.delenv("RAGMETRICS_JUDGE")
    monkeypatch.setenv("OPENAI_BASE_URL", evil.openai_base_url)
    assert Suite.from_data(rubric_suite(spec)).cases
    # ... for its own provider only: the OpenAI base URL does not let a suite send the Anthropic key there
    with pytest.raises(ConfigError, match="anthropic"):
        Suite.from_data(rubric_suite(f"anthropic:claude-haiku-4-5@{evil.url}"))
    monkeypatch.setenv("RAGMETRICS_SUITE_ALLOW", "judge_url")
    assert Suite.from_data(rubric_suite(f"anthropic:claude-haiku-4-5@{evil.url}")).cases
    monkeypatch.setenv("RAGMETRICS_SUITE_ALLOW", "judge_urls")
    with pytest.raises(ConfigError, match="RAGMETRICS_SUITE_ALLOW"):
        Suite.from_data(rubric_suite("offline"))


def test_a_suite_may_not_point_a_cache_at_its_own_folder(tmp_path, monkeypatch):
    poison = tmp_path / "poison"
    entry = {"type": "llm_judge", "llm": "offline", "cache": str(poison)}
    data = {"cases": [{**CASE, "evaluators": [entry]}]}
    with pytest.raises(
        ConfigError, match=r"cache .*poison.* is outside your cache folder.*--allow-suite-cache"
    ):
        Suite.from_data(data)
    relative = {"cases": [{**CASE, "evaluators": [{**entry, "cache": "./poison"}]}]}
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="outside your cache folder"):
        Suite.from_data(relative)
    assert Suite.from_data(data, allow_suite_cache=True).cases
    inside = Path(__import__("os").environ["RAGMETRICS_CACHE_DIR"]) / "suites"
    ok = {"cases": [{**CASE, "evaluators": [{**entry, "cache": str(inside)}, {**entry, "cache": False}]}]}
    assert Suite.from_data(ok).cases
    embed = {"type": "cosine_similarity", "embeddings": "fake", "cache": "../../tmp/x"}
    with pytest.raises(ConfigError, match="outside your cache folder"):
        Suite.from_data({"cases": [{**CASE, "evaluators": [embed]}]})
    rag = {"type": "faithfulness", "llm": "offline", "cache": str(poison)}
    with pytest.raises(ConfigError, match="outside your cache folder"):
        Suite.from_data({"cases": [{**CASE, "contexts": [], "evaluators": [rag]}]})


def test_the_pytest_plugin_option_lets_the_suites_eval_cases_load_name_a_host(pytester, evil):
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        test_loads=textwrap.dedent(
            f"""
            import pytest
            from ragmetrics import ConfigError
            from ragmetrics.regression.suite import Suite

            DATA = {{"llm": "openai:m@{evil.openai_base_url}",
                     "cases": [{{"input": "q", "output": "a", "evaluators": ["exact_match"]}}]}}

            def test_refused():
                with pytest.raises(ConfigError, match="--allow-judge-url"):
                    Suite.from_data(DATA)

            def test_allowed():
                assert Suite.from_data(DATA).cases
            """
        )
    )
    refused = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    refused.assert_outcomes(passed=1, failed=1)
    allowed = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--ragmetrics-allow-judge-url")
    allowed.assert_outcomes(passed=1, failed=1)  # now test_refused fails: it loads
    assert "RAGMETRICS_SUITE_ALLOW" not in __import__("os").environ  # put back after the session


async def test_run_suite_on_an_allowed_suite_calls_the_named_host(evil):
    suite = Suite.from_data(rubric_suite(f"openai:gpt-4o-mini@{evil.openai_base_url}"), allow_judge_url=True)
    await run_suite(suite, progress=False)
    assert evil.calls.total() >= 1


# -- item 3: what a suite may ask for -----------------------------------------------------------------

LONG = [f"Fact {i}: the river number {i} flows through the valley of region {i}. " * 3 for i in range(70)]


def heavy_case(**options: object) -> dict[str, object]:
    entry = {"type": "faithfulness", **options}
    return {
        "id": "long",
        "input": "Which river flows through region 3?",
        "contexts": LONG,
        "output": "River number 3 flows through the valley of region 3.",
        "evaluators": [entry],
    }


def test_the_14_kb_case_asking_for_30_reasks_and_a_64_token_budget_makes_no_extra_calls(
    tmp_path, openai_spec, fake_llm_server, monkeypatch
):
    assert 13_000 < sum(map(len, LONG)) < 15_000
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm_server.openai_base_url)  # the judge host is the user's
    path = suite_file(
        tmp_path, {"llm": openai_spec, "cases": [heavy_case(reasks=30, context_budget_tokens=64)]}
    )
    fake_llm_server.reset()
    code, run = run_cli(tmp_path, str(path))
    (case,) = {c["name"]: c for c in run["cases"]}.values()
    assert code == 1 and case["outcome"] == "error"
    assert "reasks: 30 is outside 0-3" in case["error"]
    assert "context_budget_tokens: 64 is outside 2000-1e+06" in case["error"]
    assert "--allow-suite-settings" in case["error"]
    assert fake_llm_server.calls.total() == 0

    default = suite_file(tmp_path, {"llm": openai_spec, "cases": [heavy_case(cache=False)]}, "default.yaml")
    fake_llm_server.reset()
    run_cli(tmp_path, str(default), "--no-canaries")
    assert fake_llm_server.calls.total() == 2  # extraction, one verification

    consent = suite_file(
        tmp_path,
        {"llm": openai_spec, "cases": [heavy_case(context_budget_tokens=64, cache=False)]},
        "ok.yaml",
    )
    fake_llm_server.reset()
    run_cli(tmp_path, str(consent), "--allow-suite-settings", "--no-canaries")
    assert fake_llm_server.calls.total() > 10  # what the consent allowed: one verification per chunk


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"type": "llm_judge", "llm": "offline", "max_attempts": 100_000},
            "max_attempts: 100000 is outside 1-10",
        ),
        ({"type": "llm_judge", "llm": "offline", "timeout_s": 86_400}, "timeout_s: 86400 is outside 0-300"),
        (
            {"type": "llm_judge", "llm": "offline", "max_concurrency": 1000},
            "max_concurrency: 1000 is outside",
        ),
        (
            {"type": "llm_judge", "llm": "offline", "max_tokens_cap": 10**6},
            "max_tokens_cap: 1e\\+06 is outside",
        ),
        ({"type": "llm_judge", "llm": "offline", "requests_per_minute": 0.01}, "requests_per_minute: 0.01"),
        ({"type": "llm_judge", "llm": "offline", "prices": {"x": 1}}, "prices \\(a suite may not set it\\)"),
        ({"type": "levenshtein", "max_chars": 10**7}, "max_chars: 1e\\+07 raises the default cap 50000"),
        ({"type": "json_match", "max_depth": 800}, "max_depth: 800 raises the default cap 500"),
        ({"type": "regex", "pattern": "x", "timeout": 45}, "timeout: 45 is outside 0-30"),
        (
            {"type": "custom", "value": "return 1", "memory_limit_mb": 512},
            "memory_limit_mb: 512 is outside",
        ),
        ({"type": "cosine_similarity", "embeddings": "fake", "cache_size": 10**8}, "cache_size"),
    ],
)
def test_settings_outside_the_sane_ranges_need_consent(entry, message):
    data = {"cases": [{**CASE, "evaluators": [entry]}]}
    with pytest.raises(
        ConfigError, match=rf"<suite>: cases\[0\]\.evaluators\[0\]: .*{message}.*allow-suite-settings"
    ):
        Suite.from_data(data)
    if "prices" not in entry:
        assert Suite.from_data(data, allow_suite_settings=True).cases


def test_settings_inside_the_ranges_load_as_given():
    entries = [
        {"type": "llm_judge", "llm": "offline", "reasks": 1, "max_attempts": 3, "timeout_s": 30},
        {"type": "faithfulness", "llm": "offline", "context_budget_tokens": 4000, "max_concurrency": 4},
        {"type": "levenshtein", "max_chars": 1000},
        {"type": "regex", "pattern": "P", "timeout": 2},
    ]
    (case,) = Suite.from_data({"cases": [{**CASE, "contexts": [], "evaluators": entries}]}).cases
    assert case.evaluators[1].evaluator.context_budget_tokens == 4000
