"""Engine overhead benchmarks. Run: ``.venv/bin/python bench/engine_overhead.py`` (see bench/README.md).

(a) Per-turn cost of the engine's model-turn path (``Run._model_turn``: request building from a
    200-message history, the streamed parse, the ``llm_call`` append with its delta, the counters)
    against a raw httpx client that POSTs the identical body to the same in-process sim model and only
    splits the SSE stream into lines. Blocks alternate, and the medians of several rounds are compared.
(b) Encoding a realistic ``llm_call`` event with the writer's msgspec path against stdlib ``json``.

(c) The same engine path against the real llama-server + SmolLM2 built by ``just real-model``, side by
    side with a raw request of the identical body (skipped, saying why, when the cache is empty).

Prints results and exits 0; never asserts on timing. ``--quick`` runs each part for a few turns only
(seconds; what ``./dev test`` runs to prove the bench works and prints its ratio lines).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx
import msgspec
import trio

from orchestrator.config import Settings, load_settings, probe_model
from orchestrator.conversation import FunctionCall, Message, ResultCard, ToolCall, Usage
from orchestrator.engine import events as ev
from orchestrator.engine.run import Run
from orchestrator.engine.state import RoleFrame, RunState
from orchestrator.llm import FunctionTool, LlmClient, LlmTimeouts, Turn, build_request
from orchestrator.runlog.events import LlmCall
from orchestrator.runlog.writer import RunLog, utc_timestamp
from orchestrator.sim import load_script, serve_sim

REPO = Path(__file__).resolve().parents[1]
HISTORY_MESSAGES = 200
CONTENT_CHARS = 200
CONTEXT_WINDOW = 65_536
REAL_MAX_TOKENS = 32
REAL_TASK = "Describe the weather in a short sentence."


@dataclass(frozen=True)
class Plan:
    """How much of each part to run."""

    rounds: int
    turns_per_block: int
    warmup_turns: int
    encode_iterations: int
    encode_rounds: int
    real_rounds: int
    real_turns_per_block: int


FULL = Plan(
    rounds=21,
    turns_per_block=10,
    warmup_turns=5,
    encode_iterations=20_000,
    encode_rounds=5,
    real_rounds=7,
    real_turns_per_block=2,
)
QUICK = Plan(
    rounds=3,
    turns_per_block=2,
    warmup_turns=1,
    encode_iterations=2_000,
    encode_rounds=2,
    real_rounds=1,
    real_turns_per_block=1,
)


def bench_role(settings: Settings) -> str:
    """A role that runs shell commands (its history below is built of ``run_shell`` turns), else the entry role."""
    guild = settings.guild
    return next((name for name, role in guild.roles.items() if "run_shell" in role.tools), guild.entry_role)


def role_tools(settings: Settings, role: str) -> list[FunctionTool]:
    """The tools a request of ``role`` offers, built from the Guild as the engine builds them."""
    guild = settings.guild
    return [
        FunctionTool(name=t, description=guild.tools[t].description, parameters=guild.tools[t].parameters)
        for t in guild.roles[role].tools
        if t in guild.tools
    ]


SCRIPT = {
    "model": "sim",
    "contextWindow": CONTEXT_WINDOW,
    "turns": [
        {
            "reusable": True,
            "content": "Checking how much room is left before the next step.",
            "toolCalls": [{"name": "context_info", "arguments": {}}],
        }
    ],
}


def _text(label: str, i: int) -> str:
    head = f"[{label} {i}] "
    return head + ("lorem ipsum dolor sit amet " * 10)[: CONTENT_CHARS - len(head)]


def build_history() -> list[Message]:
    """System prompt, task, then alternating assistant-with-tool-call / tool-result pairs (~200 chars)."""
    history = [Message(role="system", content=_text("system", 0)), Message(role="user", content=_text("task", 1))]
    i = 0
    while len(history) < HISTORY_MESSAGES:
        call = ToolCall(id=f"call_{i}", function=FunctionCall(name="run_shell", arguments='{"command":"ls -la src"}'))
        history.append(Message(role="assistant", content=_text("assistant", i), tool_calls=[call]))
        history.append(Message(role="tool", content=_text("result", i), tool_call_id=call.id))
        i += 1
    return history


# --- (a) engine per-turn overhead vs raw httpx SSE ----------------------------------------------------


async def _time_block(turn: Callable[[], Awaitable[None]], n: int) -> float:
    """Seconds per turn over ``n`` sequential turns."""
    start = time.perf_counter()
    for _ in range(n):
        await turn()
    return (time.perf_counter() - start) / n


async def bench_turns(workdir: Path, plan: Plan) -> None:
    script = load_script(json.dumps(SCRIPT).encode())
    async with trio.open_nursery() as nursery:
        base_url: str = await nursery.start(partial(serve_sim, script))
        env = {
            "ORCHESTRATOR_API_BASE": base_url,
            "ORCHESTRATOR_MODEL": "sim",
            "ORCHESTRATOR_MODEL_CONTEXT_WINDOW": str(CONTEXT_WINDOW),
        }
        secrets = workdir / "secrets"
        secrets.mkdir()
        settings = load_settings(REPO / "guild", REPO / "deployment" / "deployment.json", env, secrets_dir=secrets)
        model = settings.deployment.model
        role = bench_role(settings)
        tools = role_tools(settings, role)

        frame = RoleFrame(instance_id=f"{role}-1-1", role=role, depth=1, task="bench", history=build_history())
        log = RunLog(workdir / "log.jsonl")
        state = RunState(run_id="bench", started_at=utc_timestamp())
        async with LlmClient(model.api_base, timeouts=LlmTimeouts(attempts=1)) as llm:
            run = Run(settings=settings, workspace=workdir, state=state, log=log, llm=llm)

            async def engine_turn() -> None:
                # A fresh turn boundary: nothing pending, the last two messages new since the previous call.
                frame.pending = None
                frame.logged_upto = len(frame.history) - 2
                outcome = await run._model_turn(frame)
                if not isinstance(outcome, Message) or not outcome.tool_calls:
                    raise RuntimeError(f"unexpected engine outcome: {outcome!r}")

            request = build_request(
                model=model.name or "",
                history=frame.history,
                tools=tools,
                max_output_tokens=model.generation.max_tokens,
                temperature=model.generation.temperature,
            )
            body = msgspec.json.encode(request)

            async def client_turn() -> None:
                # The transport + parse layer alone: LlmClient on a request built once, no log, no counters.
                outcome = await llm.complete(request)
                if not isinstance(outcome, Turn):
                    raise RuntimeError(f"unexpected client outcome: {outcome!r}")

            url = model.api_base.rstrip("/") + "/responses"
            headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
            async with httpx.AsyncClient(timeout=httpx.Timeout(30.0), headers=headers) as raw_client:

                async def raw_turn() -> None:
                    async with raw_client.stream("POST", url, content=body) as response:
                        if response.status_code != 200:
                            raise RuntimeError(f"sim answered HTTP {response.status_code}")
                        pending = b""
                        lines = 0
                        async for chunk in response.aiter_raw():
                            parts = (pending + chunk).split(b"\n")
                            pending = parts.pop()
                            lines += len(parts)
                        if lines == 0:
                            raise RuntimeError("empty stream")

                async def forget_requests() -> None:
                    # The sim records every request body; clear it so memory and GC stay flat across rounds.
                    (await raw_client.delete(base_url.removesuffix("/v1") + "/_sim/requests")).raise_for_status()

                # engine and raw stay adjacent in every round, so their per-round ratio sees the same load
                sides = {"engine": engine_turn, "raw": raw_turn, "client": client_turn}
                for _ in range(plan.warmup_turns):
                    for turn in sides.values():
                        await turn()
                times: dict[str, list[float]] = {name: [] for name in sides}
                for round_no in range(plan.rounds):
                    order = list(sides)
                    if round_no % 2:
                        order.reverse()
                    for name in order:
                        await forget_requests()
                        gc.collect()
                        times[name].append(await _time_block(sides[name], plan.turns_per_block))

        log.close()
        nursery.cancel_scope.cancel()

    engine, client, raw = times["engine"], times["client"], times["raw"]
    paired = statistics.median(e / r for e, r in zip(engine, raw, strict=True))
    print(f"history: {len(frame.history)} messages, request body {len(body):,} bytes, role {role!r}")
    print(f"rounds: {plan.rounds} x {plan.turns_per_block} turns per side, interleaved, same sim, median / best block")
    for name, label in (
        ("engine", "engine (Run._model_turn)"),
        ("client", "client (LlmClient.complete)"),
        ("raw", "raw httpx + line split"),
    ):
        values = times[name]
        print(f"  {label:<30} {statistics.median(values) * 1e3:6.2f} ms / {min(values) * 1e3:6.2f} ms per turn")
    print(f"engine overhead per turn (medians): {(statistics.median(engine) - statistics.median(raw)) * 1e3:+.2f} ms")
    print(f"  of which client vs raw: {(statistics.median(client) - statistics.median(raw)) * 1e3:+.2f} ms")
    of_medians = statistics.median(engine) / statistics.median(raw)
    print(f"engine/raw ratio of medians: {of_medians:.2f}; of best blocks: {min(engine) / min(raw):.2f}")
    print(
        f"engine/raw per-turn ratio: {paired:.2f}x (goal <= 1.15x)  [median of the {plan.rounds} paired round ratios]"
    )


# --- (c) the same against the real llama-server ----------------------------------------------------


async def bench_real(workdir: Path, plan: Plan) -> None:
    """Engine turns and raw requests of the identical body against llama-server, blocks interleaved.

    Temperature 0 and a fixed seed, so both sides generate the same tokens from the same cached prompt;
    the difference is what the engine adds per turn at the model's own speed.
    """
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))  # the launcher lives with the real-model tests
    from tests.realmodel.llama_cache import real_model
    from tests.realmodel.llama_server import QWEN25, SEED, TEMPERATURE, llama_server

    missing = real_model().missing()
    if missing:
        print(f"skipped: no llama-server build in the cache ({missing[0]}); run `just real-model`")
        return
    async with llama_server(workdir, template=QWEN25) as server:
        env = {
            "ORCHESTRATOR_API_BASE": server.base_url,
            "ORCHESTRATOR_TEMPERATURE": str(TEMPERATURE),
            "ORCHESTRATOR_MAX_TOKENS": str(REAL_MAX_TOKENS),
        }
        secrets = workdir / "secrets"
        secrets.mkdir()
        settings = load_settings(REPO / "guild", REPO / "deployment" / "deployment.json", env, secrets_dir=secrets)
        settings = await probe_model(settings)
        model = settings.deployment.model
        role = bench_role(settings)
        preamble = [
            Message(role="system", content=settings.guild.roles[role].system_prompt),
            Message(role="user", content=REAL_TASK),
        ]
        frame = RoleFrame(instance_id=f"{role}-1-1", role=role, depth=1, task=REAL_TASK, history=list(preamble))
        log = RunLog(workdir / "log.jsonl")
        state = RunState(run_id="bench-real", started_at=utc_timestamp())
        request = build_request(
            model=model.name or "",
            history=preamble,
            tools=role_tools(settings, role),
            max_output_tokens=model.generation.max_tokens,
            temperature=model.generation.temperature,
        )
        body = msgspec.json.encode(request)
        generated: dict[str, int] = {}
        # llama-server closes a keep-alive connection after 5 s idle; the engine's client may reuse one just
        # as it closes ("Server disconnected without sending a response"), and then retries: allow that
        timeouts = LlmTimeouts(headers_seconds=120.0, idle_seconds=60.0, attempts=3, backoff_seconds=0.01)
        async with LlmClient(model.api_base, timeouts=timeouts) as llm:
            run = Run(settings=settings, workspace=workdir, state=state, log=log, llm=llm)

            async def engine_turn() -> None:
                frame.pending = None
                frame.history = list(preamble)  # an implicit finish appends the answer: start over each turn
                frame.logged_upto = 0
                outcome = await run._model_turn(frame)
                if isinstance(outcome, ResultCard) and outcome.error is not None:
                    raise RuntimeError(f"the engine's turn failed: {outcome.error}")
                generated["engine"] = frame.completion_tokens

            url = model.api_base.rstrip("/") + "/responses"
            headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
            # a fresh connection per request: llama-server drops idle keep-alive connections after a few seconds
            fresh = httpx.Limits(max_keepalive_connections=0)
            async with httpx.AsyncClient(timeout=httpx.Timeout(120.0), headers=headers, limits=fresh) as raw_client:

                async def raw_turn() -> None:
                    async with raw_client.stream("POST", url, content=body) as response:
                        if response.status_code != 200:
                            raise RuntimeError(f"llama-server answered HTTP {response.status_code}")
                        pending = b""
                        async for chunk in response.aiter_raw():
                            pending = (pending + chunk).split(b"\n")[-1]

                sides = {"engine": engine_turn, "raw": raw_turn}
                for turn in sides.values():  # warm the prompt cache and the connection
                    await turn()
                tokens_before = frame.completion_tokens
                times: dict[str, list[float]] = {name: [] for name in sides}
                for round_no in range(plan.real_rounds):
                    order = list(sides) if round_no % 2 == 0 else list(reversed(sides))
                    for name in order:
                        times[name].append(await _time_block(sides[name], plan.real_turns_per_block))
        log.close()

    engine, raw = times["engine"], times["raw"]
    turns = plan.real_rounds * plan.real_turns_per_block
    per_turn_tokens = (frame.completion_tokens - tokens_before) / turns
    paired = statistics.median(e / r for e, r in zip(engine, raw, strict=True))
    print(f"llama-server {real_model().server_dir.name}, SmolLM2-135M Q4_1, {QWEN25}, seed {SEED}, temperature 0")
    print(
        f"request body {len(body):,} bytes (role {role!r}, {len(request.tools)} tools), "
        f"max_output_tokens {REAL_MAX_TOKENS}, {per_turn_tokens:.0f} tokens generated per turn"
    )
    print(f"rounds: {plan.real_rounds} x {plan.real_turns_per_block} turns per side, interleaved, median / best block")
    for name, label in (("engine", "engine (Run._model_turn)"), ("raw", "raw httpx + line split")):
        values = times[name]
        print(f"  {label:<30} {statistics.median(values) * 1e3:8.1f} ms / {min(values) * 1e3:8.1f} ms per turn")
    print(f"engine overhead per turn (medians): {(statistics.median(engine) - statistics.median(raw)) * 1e3:+.1f} ms")
    print(
        f"engine/raw per-turn ratio vs llama-server: {paired:.3f}x (goal <= 1.05x)  "
        f"[median of the {plan.real_rounds} paired round ratios]"
    )


# --- (b) msgspec event encoding vs stdlib json --------------------------------------------------------


def realistic_llm_call() -> LlmCall:
    """An ``llm_call`` with a two-message delta, a received content + tool call, and usage."""
    frame = RoleFrame(instance_id="coder-1-1", role="coder", depth=1, task="bench")
    call = ToolCall(id="call_41", function=FunctionCall(name="run_shell", arguments='{"command":"pytest -q tests"}'))
    delta = [
        Message(role="assistant", content=_text("assistant", 40), reasoning="why " * 40, tool_calls=[call]),
        Message(role="tool", content=_text("result", 40), tool_call_id="call_41"),
    ]
    received = Message(
        role="assistant",
        content="Tests pass; writing the summary next.",
        reasoning="All green, nothing else to check.",
        tool_calls=[ToolCall(id="call_42", function=FunctionCall(name="finish", arguments='{"status":"success"}'))],
    )
    usage = Usage(prompt_tokens=10_412, completion_tokens=57, total_tokens=10_469, cached_prompt_tokens=10_240)
    return ev.llm_call(frame, delta, 198, received, usage, "tool_calls")


def _best(fn: Callable[[], None], plan: Plan) -> float:
    """Best seconds per iteration over ``plan.encode_rounds`` rounds of ``plan.encode_iterations`` calls."""
    times = []
    for _ in range(plan.encode_rounds):
        gc.collect()
        start = time.perf_counter()
        for _ in range(plan.encode_iterations):
            fn()
        times.append((time.perf_counter() - start) / plan.encode_iterations)
    return min(times)


def bench_encoding(workdir: Path, plan: Plan) -> None:
    event = realistic_llm_call()
    encoder = msgspec.json.Encoder()
    buffer = bytearray(4096)

    def msgspec_encode() -> None:  # exactly RunLog.emit's encoding step
        encoder.encode_into(event, buffer)
        buffer.extend(b"\n")

    def json_encode() -> None:
        (json.dumps(msgspec.to_builtins(event)) + "\n").encode()

    if json.loads(encoder.encode(event)) != json.loads(json.dumps(msgspec.to_builtins(event))):
        raise RuntimeError("the two encodings disagree")

    log = RunLog(workdir / "emit.jsonl")
    fd = os.open(workdir / "json.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def json_write() -> None:
        os.write(fd, (json.dumps(msgspec.to_builtins(event)) + "\n").encode())

    try:
        t_msgspec, t_json = _best(msgspec_encode, plan), _best(json_encode, plan)
        t_emit, t_json_write = _best(partial(log.emit, event), plan), _best(json_write, plan)
    finally:
        log.close()
        os.close(fd)

    size = len(encoder.encode(event))
    print(
        f"event: llm_call, {size:,} bytes encoded; {plan.encode_rounds} rounds x {plan.encode_iterations:,}, best round"
    )
    print(f"msgspec encode_into: {t_msgspec * 1e6:.2f} us/event; json.dumps(to_builtins): {t_json * 1e6:.2f} us/event")
    print(f"RunLog.emit (filter + encode + write): {t_emit * 1e6:.2f} us/event")
    print(f"json.dumps(to_builtins) + os.write:    {t_json_write * 1e6:.2f} us/event")
    print(f"emit vs json+write speedup: {t_json_write / t_emit:.1f}x")
    print(f"msgspec/json encode speedup: {t_json / t_msgspec:.1f}x (goal >= 5x)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few turns of each part (seconds): proves it runs")
    parser.add_argument("--no-real", action="store_true", help="skip part (c), the real llama-server")
    parser.add_argument("--real-only", action="store_true", help="only part (c), the real llama-server")
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="engine-bench-") as tmp:
        workdir = Path(tmp)
        if not args.real_only:
            print("== (a) engine per-turn overhead vs raw httpx SSE" + (" (--quick)" if args.quick else ""))
            (workdir / "turns").mkdir()
            trio.run(bench_turns, workdir / "turns", plan)
            print()
            print("== (b) msgspec event encoding vs stdlib json")
            bench_encoding(workdir, plan)
            print()
        print("== (c) engine per-turn overhead vs a raw request, against the real llama-server")
        if args.no_real:
            print("skipped (--no-real)")
        else:
            (workdir / "real").mkdir()
            trio.run(bench_real, workdir / "real", plan)
    print()
    print(f"total bench time: {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
