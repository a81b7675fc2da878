"""What scoring conversations costs per assistant turn: ragmetrics beside DeepEval's and RAGAS's metrics.

The same conversations go through one counting fake server (``FakeLLMServer(answer="schema")``: every
request counted, tokens as ceil(characters / 4) over messages and schema) for every tool:

* ragmetrics: faithfulness, relevancy and groundedness on one judge, one record per assistant turn,
  canaries off. ragmetrics' own prompts are answered by the server's reading answerer (a rule on the
  same server: the offline judge reading the prompt), since a schema filler is refused as a judge
  that is not reading; a second row runs it on the schema filler itself with the judge gate off.
* DeepEval: ``TurnFaithfulnessMetric``, ``TurnRelevancyMetric``, ``TurnContextualPrecisionMetric``,
  ``TurnContextualRecallMetric``, ``TurnContextualRelevancyMetric`` (``GPTModel`` on the server).
* RAGAS: its multi-turn metrics, ``AgentGoalAccuracyWithoutReference``,
  ``AgentGoalAccuracyWithReference``, ``TopicAdherence`` (``llm_factory`` on an ``AsyncOpenAI``
  client), and ``ToolCallAccuracy`` / ``ToolCallF1`` (no LLM) on the conversations that expect tool calls.

Each peer metric runs in its own process of the peers' environment, one metric at a time, so the
server's counts are that metric's. The peers' replies are schema-valid but meaningless: their scores
mean nothing, their calls and tokens are what they spend (a reading model that finds more claims can
make them spend more). Conversations: 10 of 3 assistant turns chained from seeded records of
``../shared/data/faithfulness_dev.jsonl`` (each turn a record's question, answer and contexts), and
the 5 bundled example conversations (8 assistant turns, tool calls among them).

The peers live in their own environment, outside the repository and never in ragmetrics' dependencies
(RAGAS 0.4.3 imports ``langchain_community.chat_models.vertexai``, gone in langchain-community 0.4)::

    python3 -m venv ../peer-env
    ../peer-env/bin/pip install deepeval==4.3.1 ragas==0.4.3 'langchain-community<0.4'
    python benchmarks/conversation_costs.py                    # --peer-python ../peer-env/bin/python
    python benchmarks/conversation_costs.py --filler placeholder   # every list in a reply one item long
    python benchmarks/conversation_costs.py --runs 1 --quick   # one run, 3 conversations

The schema filler answers lists at their ``minItems`` (mostly empty), so a peer that asks for claims
and then verdicts on them gets no claims and skips the verdicts; ``--filler placeholder`` answers one
item per list, so those calls happen (a real model finding n items can make more).

Without that environment (or with a peer not importable in it) the peer is recorded as not run, with why.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "faithfulness_dev.jsonl"
EXAMPLES = HERE.parent / "ragmetrics" / "data" / "example_conversations.jsonl"
DEFAULT_PEER_PYTHON = HERE.parent.parent / "peer-env" / "bin" / "python"
MODEL = "gpt-4o-mini"
SEED = 41
DEEPEVAL_METRICS = (
    "TurnFaithfulnessMetric",
    "TurnRelevancyMetric",
    "TurnContextualPrecisionMetric",
    "TurnContextualRecallMetric",
    "TurnContextualRelevancyMetric",
)
RAGAS_METRICS = (
    "AgentGoalAccuracyWithoutReference",
    "AgentGoalAccuracyWithReference",
    "TopicAdherence",
    "ToolCallAccuracy",
    "ToolCallF1",
)
PEER_ENV = {
    "OPENAI_API_KEY": "sk-benchmark-dummy",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    "DEEPEVAL_GRPC_LOGGING": "NO",
    "RAGAS_DO_NOT_TRACK": "true",
    "HF_HUB_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


# -- the conversations (standard library only: the peers' process reads them too) -----------------


def load_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def chain(rows: list[dict], conv_id: str) -> dict:
    """One conversation of independent records: each a user question and an assistant answer with contexts."""
    messages: list[dict] = []
    for row in rows:
        messages.append({"role": "user", "content": row["question"]})
        messages.append({"role": "assistant", "content": row["answer"], "contexts": list(row["contexts"])})
    return {"id": conv_id, "messages": messages, "chained": [row["id"] for row in rows]}


def short_rows(rows: list[dict]) -> list[dict]:
    """Records of a conversational size: answers under 700 characters, contexts under 4,000 in all."""
    return [r for r in rows if len(r["answer"]) < 700 and sum(map(len, r["contexts"])) < 4000]


def build_conversations(data: Path, n: int = 10, turns: int = 3, examples: bool = True) -> list[dict]:
    picked = random.Random(SEED).sample(short_rows(load_rows(data)), n * turns)
    convs = [chain(picked[i * turns : (i + 1) * turns], f"chained-{i}") for i in range(n)]
    if examples:
        convs += load_rows(EXAMPLES)
    return convs


def assistant_turns(conv: dict) -> int:
    """Assistant messages with text: the turns every tool is charged for."""
    return sum(1 for m in conv["messages"] if m["role"] == "assistant" and (m.get("content") or "").strip())


def tool_calls_of(message: dict) -> list[tuple[str, dict]]:
    """(name, arguments) of an assistant message's tool calls, in either accepted shape."""
    out = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function", call)
        args = fn.get("arguments") or {}
        out.append((fn["name"], json.loads(args) if isinstance(args, str) else dict(args)))
    return out


def outcome_of(conv: dict) -> str:
    """The goal or expected outcome a peer metric asks for: the record's goal, else the last reference,
    else the last answer (the chained conversations have neither goal nor reference)."""
    if conv.get("goal"):
        return conv["goal"]
    refs = [m["reference"] for m in conv["messages"] if m.get("reference")]
    answers = [m["content"] for m in conv["messages"] if m["role"] == "assistant" and m.get("content")]
    return (refs or answers)[-1]


# -- the peers (run in the peers' environment: no ragmetrics import) -------------------------------


def deepeval_case(conv: dict) -> Any:
    from deepeval.test_case import ConversationalTestCase, ToolCall, Turn

    turns: list[Any] = []
    found: list[str] = []  # tool results since the last assistant text: that turn's retrieval context
    called: list[Any] = []
    for m in conv["messages"]:
        if m["role"] == "user":
            turns.append(Turn(role="user", content=m["content"]))
        elif m["role"] == "tool":
            found.append(m["content"])
        elif m["role"] == "assistant":
            called += [ToolCall(name=name, input_parameters=args) for name, args in tool_calls_of(m)]
            if (m.get("content") or "").strip():
                context = list(m.get("contexts") or []) + found
                turns.append(
                    Turn(
                        role="assistant",
                        content=m["content"],
                        retrieval_context=context or None,
                        tools_called=called or None,
                    )
                )
                found, called = [], []
    return ConversationalTestCase(turns=turns, expected_outcome=outcome_of(conv), name=conv["id"])


def ragas_messages(conv: dict) -> list[Any]:
    """RAGAS messages; an assistant message's own ``contexts`` become a ``retrieve`` tool call and result."""
    from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage

    out: list[Any] = []
    question = ""
    for m in conv["messages"]:
        if m["role"] == "user":
            question = m["content"]
            out.append(HumanMessage(content=m["content"]))
        elif m["role"] == "tool":
            out.append(ToolMessage(content=m["content"]))
        elif m["role"] == "assistant":
            if m.get("contexts"):
                out.append(
                    AIMessage(content="", tool_calls=[ToolCall(name="retrieve", args={"query": question})])
                )
                out.append(ToolMessage(content="\n\n".join(m["contexts"])))
            calls = [ToolCall(name=name, args=args) for name, args in tool_calls_of(m)]
            out.append(AIMessage(content=m.get("content") or "", tool_calls=calls or None))
    return out


async def run_deepeval(name: str, convs: list[dict], base_url: str, concurrency: int) -> dict:
    import deepeval
    import deepeval.metrics
    from deepeval.models import GPTModel

    model = GPTModel(model=MODEL, api_key=PEER_ENV["OPENAI_API_KEY"], base_url=base_url, temperature=0)
    cls = getattr(deepeval.metrics, name)
    params = inspect.signature(cls(model=model).a_measure).parameters
    flags = {k: False for k in ("_show_indicator", "_log_metric_to_confident") if k in params}
    gate = asyncio.Semaphore(concurrency)

    async def one(conv: dict) -> float | None:
        async with gate:
            metric = cls(model=model, async_mode=True)
            return await metric.a_measure(deepeval_case(conv), **flags)

    return await _gather(convs, one, {"deepeval": deepeval.__version__})


async def run_ragas(name: str, convs: list[dict], base_url: str, concurrency: int) -> dict:
    import ragas
    from openai import AsyncOpenAI
    from ragas.dataset_schema import MultiTurnSample
    from ragas.llms import llm_factory
    from ragas.messages import ToolCall
    from ragas.metrics import collections as rc

    cls = getattr(rc, name)
    uses_llm = name not in ("ToolCallAccuracy", "ToolCallF1")
    client = AsyncOpenAI(base_url=base_url, api_key=PEER_ENV["OPENAI_API_KEY"], max_retries=0)
    llm = llm_factory(MODEL, client=client) if uses_llm else None
    if not uses_llm:  # tool-call metrics need expected calls: only the conversations that have them
        convs = [c for c in convs if c.get("expected_tool_calls")]
    gate = asyncio.Semaphore(concurrency)

    async def one(conv: dict) -> float | None:
        sample = MultiTurnSample(
            user_input=ragas_messages(conv),
            reference=outcome_of(conv),
            reference_topics=[outcome_of(conv)],
            reference_tool_calls=[
                ToolCall(name=c["name"], args=c.get("arguments") or {})
                for c in conv.get("expected_tool_calls") or []
            ]
            or None,
        )
        metric = cls(llm=llm) if uses_llm else cls()
        kwargs: dict[str, Any] = {"user_input": sample.user_input}
        wanted = inspect.signature(metric.ascore).parameters
        if "reference" in wanted:
            kwargs["reference"] = sample.reference
        if "reference_topics" in wanted:
            kwargs["reference_topics"] = sample.reference_topics
        if "reference_tool_calls" in wanted:
            kwargs["reference_tool_calls"] = sample.reference_tool_calls
        async with gate:
            result = await metric.ascore(**kwargs)
        return result.value

    try:
        return await _gather(convs, one, {"ragas": ragas.__version__})
    finally:
        await client.close()


async def _gather(convs: list[dict], one: Any, versions: dict) -> dict:
    started = time.perf_counter()
    outcomes = await asyncio.gather(*(one(c) for c in convs), return_exceptions=True)
    wall = time.perf_counter() - started
    errors = [
        {"conversation": c["id"], "error": f"{type(o).__name__}: {str(o)[:300]}"}
        for c, o in zip(convs, outcomes, strict=True)
        if isinstance(o, BaseException)
    ]
    return {
        "versions": versions,
        "conversations": len(convs),
        "turns": sum(assistant_turns(c) for c in convs),
        "scored": len(convs) - len(errors),
        "errors": errors,
        "wall_s": round(wall, 3),
    }


def peer_main(args: argparse.Namespace) -> None:
    """The child process: one peer metric over the conversations, a JSON line on stdout."""
    convs = load_rows(args.data)
    run = run_deepeval if args.peer == "deepeval" else run_ragas
    out = asyncio.run(run(args.metric, convs, args.base_url, args.concurrency))
    print("RESULT " + json.dumps(out))


# -- the parent: server, ragmetrics, and the peers' processes -------------------------------------


def peer_check(python: Path, peer: str) -> str | None:
    """Why ``peer`` cannot run from ``python`` (None: it can)."""
    if not python.exists():
        return f"no peer environment at {python} (create it with the commands in this script's docstring)"
    module = {"deepeval": "deepeval", "ragas": "ragas.metrics.collections"}[peer]
    probe = subprocess.run(
        [str(python), "-c", f"import {module}"],
        capture_output=True,
        text=True,
        env={**os.environ, **PEER_ENV},
        timeout=300,
    )
    if probe.returncode:
        return f"`import {module}` failed in {python}: {probe.stderr.strip().splitlines()[-1][:300]}"
    return None


PEER_PACKAGES = (
    "deepeval",
    "ragas",
    "openai",
    "instructor",
    "langchain-community",
    "langchain-core",
    "pydantic",
)


def peer_versions(python: Path) -> dict:
    """The versions of the peers and of what they talk through, in the peers' environment."""
    code = (
        "import importlib.metadata as m, json\n"
        "def v(p):\n    try: return m.version(p)\n    except m.PackageNotFoundError: return None\n"
        f"print(json.dumps({{p: v(p) for p in {PEER_PACKAGES!r}}}))"
    )
    probe = subprocess.run([str(python), "-c", code], capture_output=True, text=True, timeout=120)
    return json.loads(probe.stdout) if probe.returncode == 0 else {"error": probe.stderr[-300:]}


def peer_run(python: Path, peer: str, metric: str, data: Path, srv: Any, concurrency: int) -> dict:
    srv.reset()
    env = {**os.environ, **PEER_ENV}
    env.pop("PYTHONPATH", None)
    started = time.perf_counter()
    proc = subprocess.run(
        [
            str(python),
            __file__,
            "--peer",
            peer,
            "--metric",
            metric,
            "--data",
            str(data),
            "--base-url",
            srv.openai_base_url,
            "--concurrency",
            str(concurrency),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    process_s = time.perf_counter() - started
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        out: dict = {"errors": [{"conversation": None, "error": f"exit {proc.returncode}: {tail[:300]}"}]}
        out.update(scored=0, turns=None, conversations=None, wall_s=None)
    else:
        out = json.loads(lines[-1].removeprefix("RESULT "))
    out.update(server_counts(srv), process_s=round(process_s, 3))
    return out


def server_counts(srv: Any) -> dict:
    calls = srv.calls
    return {
        "calls": calls.total() - calls.get("embeddings", 0),
        "embedding_calls": calls.get("embeddings", 0),
        "prompt_tokens": srv.prompt_tokens,
        "completion_tokens": srv.completion_tokens,
        "calls_by_schema": dict(sorted(calls.items())),
    }


def reading_rule(srv: Any) -> None:
    """ragmetrics' prompts answered by the offline judge reading them; every other request schema-filled."""
    from ragmetrics.judge.offline.judge import answer
    from ragmetrics.testing import FakeReply

    srv.on(lambda r: r.task is not None, lambda r: FakeReply(json=dict(answer(r.task, r.variables))))


async def ragmetrics_run(convs: list[dict], base_url: str, metrics: list[str], reading: bool) -> dict:
    import ragmetrics
    from ragmetrics import FaithfulnessMetric, GroundednessMetric, RelevancyMetric

    classes = {
        "faithfulness": FaithfulnessMetric,
        "relevancy": RelevancyMetric,
        "groundedness": GroundednessMetric,
    }
    spec = f"openai:{MODEL}@{base_url}"
    objs = [classes[m](llm=spec, cache=False) for m in metrics]
    shared = objs[0].judge
    for m in objs[1:]:
        m.use_judge(shared)
    started = time.perf_counter()
    try:
        results = await ragmetrics.evaluate(
            convs,
            metrics=objs,
            canaries=False,
            judge_health_min=0.5 if reading else None,
            progress=False,
        )
    finally:
        await shared.aclose()
    wall = time.perf_counter() - started
    statuses: dict[str, int] = {}
    for rec in results:
        for name, res in rec.results.items():
            statuses[f"{name}:{res.status}"] = statuses.get(f"{name}:{res.status}", 0) + 1
    return {
        "versions": {"ragmetrics": ragmetrics.__version__},
        "conversations": len(convs),
        "turns": len(results),
        "scored": sum(all(r.status == "ok" for r in rec.results.values()) for rec in results),
        "statuses": statuses,
        "errors": [
            {"conversation": rec.id, "error": f"{n}: {r.status}"}
            for rec in results
            for n, r in rec.results.items()
            if r.status not in ("ok", "no_claims")
        ],
        "wall_s": round(wall, 3),
    }


def per_turn(runs: list[dict], turns: int) -> dict:
    """Medians over the runs, per assistant turn of every conversation given to the tool."""
    med = {k: statistics.median(r[k] for r in runs) for k in ("calls", "prompt_tokens", "completion_tokens")}
    walls = [r["wall_s"] for r in runs if r.get("wall_s") is not None]
    spawns = [r["process_s"] for r in runs if r.get("process_s") is not None]
    return {
        "calls_per_turn": round(med["calls"] / turns, 3),
        "prompt_tokens_per_turn": round(med["prompt_tokens"] / turns, 1),
        "completion_tokens_per_turn": round(med["completion_tokens"] / turns, 1),
        "median_calls": med["calls"],
        "median_prompt_tokens": med["prompt_tokens"],
        "median_wall_s": statistics.median(walls) if walls else None,
        "median_process_s": statistics.median(spawns) if spawns else None,
        "errors_per_run": [len(r["errors"]) for r in runs],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--peer-python",
        type=Path,
        default=Path(os.environ.get("RAGMETRICS_PEER_PYTHON", DEFAULT_PEER_PYTHON)),
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="3 chained conversations, no examples")
    parser.add_argument(
        "--filler",
        choices=("schema", "placeholder"),
        default="schema",
        help="how the server fills the peers' schemas: 'schema' (lists at minItems, often empty) or "
        "'placeholder' (every list one item long, so the peers' per-item calls happen)",
    )
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--peer", choices=("deepeval", "ragas"), help=argparse.SUPPRESS)
    parser.add_argument("--metric", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer:
        peer_main(args)
        return
    from ragmetrics.testing import FakeLLMServer

    convs = build_conversations(args.data, n=3 if args.quick else 10, examples=not args.quick)
    turns = sum(assistant_turns(c) for c in convs)
    tool_convs = [c for c in convs if c.get("expected_tool_calls")]
    result: dict = {
        "data": f"{args.data.name} (seed {SEED}, 10 x 3 turns) + {EXAMPLES.name}",
        "conversations": len(convs),
        "assistant_turns": turns,
        "server": f"FakeLLMServer(answer={args.filler!r}), one instance for every tool; tokens = "
        "ceil(chars / 4) of messages, tools and response_format schema",
        "filler": args.filler,
        "runs": args.runs,
        "python": sys.version.split()[0],
        "cores": os.cpu_count(),
        "tools": {},
    }
    peers = {p: peer_check(args.peer_python, p) for p in ("deepeval", "ragas")}
    if not all(peers.values()):
        result["peer_env"] = {"python": str(args.peer_python), **peer_versions(args.peer_python)}
    raw: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RAGMETRICS_CACHE_DIR"] = tmp
        os.environ.setdefault("OPENAI_API_KEY", PEER_ENV["OPENAI_API_KEY"])
        data = Path(tmp) / "conversations.jsonl"
        data.write_text("".join(json.dumps(c) + "\n" for c in convs), encoding="utf-8")
        with FakeLLMServer(answer=args.filler) as srv:
            for run in range(args.runs):
                for label, reading in (
                    ("ragmetrics", True),
                    (f"ragmetrics, {args.filler} filler, gate off", False),
                ):
                    srv.reset()
                    if reading:
                        reading_rule(srv)
                    core = ["faithfulness", "relevancy", "groundedness"]
                    out = asyncio.run(ragmetrics_run(convs, srv.openai_base_url, core, reading))
                    out.update(server_counts(srv))
                    raw.setdefault(label, []).append(out)
                    print(
                        f"run {run}: {label}: {out['calls']} calls, {out['prompt_tokens']} tokens", flush=True
                    )
                for peer, names in (("deepeval", DEEPEVAL_METRICS), ("ragas", RAGAS_METRICS)):
                    if peers[peer]:
                        continue
                    for name in names:
                        out = peer_run(args.peer_python, peer, name, data, srv, args.concurrency)
                        raw.setdefault(f"{peer}:{name}", []).append(out)
                        print(
                            f"run {run}: {peer} {name}: {out['calls']} calls, {out['prompt_tokens']} tokens, "
                            f"{len(out['errors'])} errors",
                            flush=True,
                        )
    for key, runs in raw.items():
        charged = tool_convs if key.startswith("ragas:ToolCall") else convs  # what the metric was given
        n_turns = sum(assistant_turns(c) for c in charged)
        if not n_turns:
            result.setdefault("not_run", {})[key] = "no conversation here expects tool calls"
            continue
        result["tools"][key] = {**per_turn(runs, n_turns), "turns": n_turns, "runs": runs}
    result.setdefault("not_run", {}).update({p: why for p, why in peers.items() if why})
    result["versions"] = {
        k: v for runs in raw.values() for r in runs for k, v in r.get("versions", {}).items()
    }
    for peer in ("deepeval", "ragas"):
        if peers[peer]:
            continue
        names = DEEPEVAL_METRICS if peer == "deepeval" else RAGAS_METRICS[:3]
        rows = [result["tools"][f"{peer}:{n}"] for n in names]
        result["tools"][f"{peer}: all LLM metrics above"] = {
            "calls_per_turn": round(sum(r["calls_per_turn"] for r in rows), 3),
            "prompt_tokens_per_turn": round(sum(r["prompt_tokens_per_turn"] for r in rows), 1),
            "median_wall_s": round(sum(r["median_wall_s"] or 0 for r in rows), 3),
        }
    out = args.out or HERE / "results" / (
        "conversation_costs.json" if args.filler == "schema" else f"conversation_costs_{args.filler}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print()
    print(
        "| tool: metrics | turns | LLM calls / turn | prompt tokens / turn | wall s (median) "
        "| errors per run |"
    )
    print("|---|---|---|---|---|---|")
    for key, row in result["tools"].items():
        print(
            f"| {key} | {row.get('turns', '')} | {row['calls_per_turn']:.2f} "
            f"| {row['prompt_tokens_per_turn']:,.0f} "
            f"| {row['median_wall_s']} | {row.get('errors_per_run', '')} |"
        )
    for peer, why in result["not_run"].items():
        print(f"{peer}: not run: {why}")


if __name__ == "__main__":
    main()
