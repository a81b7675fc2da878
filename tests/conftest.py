"""Shared fixtures: the loopback fake LLM provider, a clean environment, and the --live switch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

# Importing the fixture registers it (the way ragmetrics.testing documents for users' conftest.py files).
from ragmetrics.testing import FakeLLMServer, fake_llm_server  # noqa: F401

_PROVIDER_VARIABLES = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "RAGMETRICS_JUDGE",
    "RAGMETRICS_CACHE_DIR",
    "RAGMETRICS_PRICES",
    "RAGMETRICS_MAX_ATTEMPTS",
    "RAGMETRICS_TIMEOUT_S",
    "RAGMETRICS_SUITE_ALLOW",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--live", action="store_true", help="run tests against real providers (needs keys)")


# Tests that share one heavy resource run on one pytest-xdist worker (``--dist loadgroup``), so a parallel run
# starts a Ray cluster and Chromium once per group instead of once per worker; the heaviest integration tests
# are also marked ``once``: `.ci/run` runs them on the main Python only (``-m "not once"`` elsewhere).
_GROUPS = {"tests/integrations/test_ray.py": "ray", "tests/report/test_browser": "browser"}
_ONCE = ("tests/integrations/test_ray.py", "tests/report/test_browser", "tests/test_lint.py")


def _relative(item: pytest.Item, root: Path) -> str:
    try:
        return item.path.relative_to(root).as_posix()
    except ValueError:
        return item.path.as_posix()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))
    for item in items:
        path = _relative(item, root)
        for prefix, group in _GROUPS.items():
            if path.startswith(prefix):
                item.add_marker(pytest.mark.xdist_group(group))
        if path.startswith(_ONCE):
            item.add_marker(pytest.mark.once)
    if config.getoption("--live"):
        return
    skip = pytest.mark.skip(reason="live provider test: run with --live and a key")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory, request) -> None:
    """No provider key or judge from the developer's shell leaks in; the cache is a temporary folder."""
    if "live" in request.keywords:
        return
    for name in _PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RAGMETRICS_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def dummy_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy provider keys, for judges pointed at the fake server."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy-key-never-sent-anywhere-real")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-dummy-key")


@pytest.fixture
def openai_spec(fake_llm_server, dummy_keys) -> str:  # noqa: F811 - pytest injects the imported fixture
    """A judge spec for the OpenAI-compatible fake server."""
    return f"openai:gpt-4o-mini@{fake_llm_server.openai_base_url}"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    """A fake server answering with the pipeline tests' cheap deterministic judge (modules may override)."""
    from tests.pipeline.test_runner import answer

    with FakeLLMServer(answer=answer) as srv:
        yield srv


@pytest.fixture
def srv(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    """``server``, reset around the test, with a dummy OpenAI key set."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    server.reset()
    yield server
    server.reset()
