"""The sim-model HTTP server: a Quart-Trio app answering Responses-API requests from a script.

All state (the script, which turns are consumed, the request record, id counters) lives in one
:class:`SimState` per app built by :func:`create_sim_app`; :func:`serve_sim` serves it on hypercorn's
trio worker.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

import msgspec
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from quart import Response, request
from quart_trio import QuartTrio

from orchestrator.sim.llama import LOADING_MESSAGE, build_llama_stream, llama_models, llama_props, request_problem
from orchestrator.sim.matching import (
    SimRequest,
    decode_request,
    estimate_prompt_tokens,
    exceeds_context,
    last_input_text,
    resolve_usage,
    select_turn,
)
from orchestrator.sim.script import ScriptError, SimScript, ToolCall, Turn, parse_script
from orchestrator.sim.sseframes import ResponseMeta, SseEvent, build_stream

__all__ = ["SimState", "create_sim_app", "hypercorn_config", "serve_sim"]

_JSON = msgspec.json.Encoder()

#: llama-server's error ``type`` per HTTP status.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    501: "not_supported_error",
    503: "unavailable_error",
}
CONTEXT_MESSAGE = "the request exceeds the available context size, try increasing it"
_FINISH_TURN = Turn(
    tool_calls=[ToolCall(name="finish", arguments={"status": "success", "summary": "sim script exhausted"})]
)
_EXCERPT = 200


class SimState:
    """Mutable per-app state: the script, consumption flags, the request record and id counters."""

    def __init__(self, script: SimScript) -> None:
        self.reset(script)

    def reset(self, script: SimScript) -> None:
        """Install ``script`` and forget consumption, recorded requests and id counters."""
        self.script = script
        self.loaded_at = time.monotonic() + script.flavor.loading_ms / 1000
        self.consumed = [False] * len(script.turns)
        self.requests: list[dict[str, Any]] = []
        self.responses = 0
        self.calls = 0

    def loading(self) -> bool:
        """True while the ``llama-server`` flavor is still "loading its model"."""
        return self.script.llama and time.monotonic() < self.loaded_at

    def record(self, path: str, body: Any, turn: int | None, status: int, *, completed: bool = True) -> dict[str, Any]:
        """Note one request; ``completed`` turns true once a streamed answer was sent to its end (a
        client that disconnects mid-stream leaves it false)."""
        entry = {"path": path, "body": body, "turn": turn, "status": status, "completed": completed}
        self.requests.append(entry)
        return entry


def _json(payload: Any, status: int = 200) -> Response:
    return Response(_JSON.encode(payload), status=status, content_type="application/json")


def _error(status: int, message: str, **extra: Any) -> Response:
    error_type = _ERROR_TYPES.get(status, "server_error")
    return _json({"error": {"code": status, "message": message, "type": error_type, **extra}}, status)


def _context_error(prompt_tokens: int, context_window: int) -> Response:
    return _json(
        {
            "error": {
                "code": 400,
                "message": CONTEXT_MESSAGE,
                "type": "exceed_context_size_error",
                "n_prompt_tokens": prompt_tokens,
                "n_ctx": context_window,
            }
        },
        400,
    )


async def _paced(
    events: list[SseEvent], delay_s: float, stall_at: int | None, stall_s: float, entry: dict[str, Any]
) -> AsyncIterator[bytes]:
    """Yield the frames, sleeping ``delay_s`` before each delta but the first, and ``stall_s`` at ``stall_at``.

    Cancelled (by hypercorn) when the client disconnects; the cancellation propagates untouched.
    """
    seen_delta = False
    for index, event in enumerate(events):
        if index == stall_at:
            await trio.sleep(stall_s)
        if event.delta:
            if seen_delta and delay_s:
                await trio.sleep(delay_s)
            seen_delta = True
        yield event.frame
    entry["completed"] = True


def _models(state: SimState) -> Response:
    script = state.script
    spec = script.models_spec()
    if spec.status != 200:
        return _error(spec.status, f"sim: scripted /v1/models failure (HTTP {spec.status})")
    if script.llama:
        return _json(llama_models(script))
    data: list[dict[str, Any]] = []
    for model_id in script.model_ids():
        entry: dict[str, Any] = {"id": model_id, "object": "model", "created": 0, "owned_by": "llamacpp"}
        if spec.report == "meta":
            entry["meta"] = {
                "vocab_type": 2,
                "n_vocab": 32000,
                "n_ctx_train": script.context_window,
                "n_ctx": script.context_window,
                "n_embd": 4096,
                "n_params": 0,
                "size": 0,
            }
        elif spec.report == "context_length":
            entry["context_length"] = script.context_window
        data.append(entry)
    return _json({"object": "list", "data": data})


async def _respond(state: SimState) -> Response:
    """Answer one ``POST /v1/responses``; see ``docs/sim-model.md`` for the rules."""
    path = request.path
    body = await request.get_data(as_text=False)
    try:
        raw: Any = msgspec.json.decode(body)
        req: SimRequest = decode_request(body)
    except msgspec.MsgspecError as exc:
        state.record(path, None, None, 400)
        return _error(400, f"sim: invalid request body: {exc}")

    script = state.script
    estimate = estimate_prompt_tokens(req, script.chars_per_token)
    if script.llama:
        problem = request_problem(req, script.flavor.system_first)
        if problem is not None:
            state.record(path, raw, None, 500)
            return _error(500, problem)
    # llama-server refuses only a prompt that does not fit at all; OpenAI also counts the reservation.
    if exceeds_context(estimate, req, script.context_window, reserve=not script.llama):
        state.record(path, raw, None, 400)
        return _context_error(estimate, script.context_window)

    index = select_turn(script.turns, state.consumed, req)
    if index is None:
        if script.on_exhausted == "error":
            state.record(path, raw, None, 500)
            excerpt = last_input_text(req)[:_EXCERPT]
            return _error(500, f"sim script exhausted: no unconsumed turn matches; last input: {excerpt!r}")
        turn = _FINISH_TURN
    else:
        turn = script.turns[index]
        if not turn.reusable:
            state.consumed[index] = True

    fail = turn.fail
    if fail is not None and fail.status is not None:
        state.record(path, raw, index, fail.status)
        return _error(fail.status, fail.message or f"sim: scripted failure (HTTP {fail.status})")
    if fail is not None and fail.context_exceeded:
        state.record(path, raw, index, 400)
        prompt = fail.prompt_tokens if fail.prompt_tokens is not None else max(estimate, script.context_window)
        return _context_error(prompt, script.context_window)

    emitted = turn
    if fail is not None and fail.empty:
        emitted = msgspec.structs.replace(turn, reasoning=None, content=None, tool_calls=[])
    state.responses += 1
    meta = ResponseMeta(
        number=state.responses,
        model=req.model or script.model,
        instructions=req.instructions,
        tools=req.tools,
        max_output_tokens=req.max_output_tokens,
        temperature=req.temperature,
    )
    build = build_llama_stream if script.llama else build_stream
    plan = build(emitted, meta, resolve_usage(emitted, estimate, script), first_call=state.calls + 1)
    state.calls += plan.calls_used
    entry = state.record(path, raw, index, 200, completed=not req.stream)

    if fail is not None and fail.stall_before_headers_ms is not None:
        await trio.sleep(fail.stall_before_headers_ms / 1000)
    if not req.stream:
        return _json(plan.response)
    stall_at, stall_s = None, 0.0
    if fail is not None and fail.stall_mid_stream_ms is not None:
        stall_at, stall_s = len(plan.events) // 2, fail.stall_mid_stream_ms / 1000
    response = Response(
        _paced(plan.events, turn.chunk_delay_ms / 1000, stall_at, stall_s, entry),
        status=200,
        content_type="text/event-stream",
    )
    response.headers["Content-Type"] = "text/event-stream"
    response.headers["Cache-Control"] = "no-cache"
    return response


def create_sim_app(script: SimScript) -> QuartTrio:
    """Build a fresh sim app serving ``script``; every app has its own :class:`SimState`.

    Handlers never raise on a client disconnect: hypercorn cancels the handler or the body generator and
    the cancellation unwinds normally.
    """
    app = QuartTrio("orchestrator.sim")
    app.config["RESPONSE_TIMEOUT"] = None  # long scripted stalls and slow streams must not be cut off
    state = SimState(script)
    app.extensions["sim"] = state

    def loading() -> Response | None:
        return _error(503, LOADING_MESSAGE) if state.loading() else None

    async def responses() -> Response:
        refused = loading()
        if refused is not None:
            state.record(request.path, None, None, 503)
            return refused
        return await _respond(state)

    async def models() -> Response:
        return loading() or _models(state)

    async def props() -> Response:
        if not state.script.llama:
            return _error(404, "File Not Found")
        return loading() or _json(llama_props(state.script))

    async def health() -> Response:
        return loading() or _json({"status": "ok"})

    async def get_requests() -> Response:
        return _json(state.requests)

    async def clear_requests() -> Response:
        state.requests.clear()
        return _json({"ok": True})

    async def replace_script() -> Response:
        try:
            new = parse_script(await request.get_data(as_text=False))
        except ScriptError as exc:
            return _error(400, str(exc), path=exc.path)
        state.reset(new)
        return _json({"ok": True, "turns": len(new.turns)})

    for rule in ("/v1/responses", "/responses"):
        app.add_url_rule(rule, f"responses{rule}", responses, methods=["POST"])
    for rule in ("/v1/models", "/models"):
        app.add_url_rule(rule, f"models{rule}", models, methods=["GET"])
    app.add_url_rule("/props", "props", props, methods=["GET"])
    app.add_url_rule("/health", "health", health, methods=["GET"])
    app.add_url_rule("/_sim/requests", "get_requests", get_requests, methods=["GET"])
    app.add_url_rule("/_sim/requests", "clear_requests", clear_requests, methods=["DELETE"])
    app.add_url_rule("/_sim/script", "replace_script", replace_script, methods=["POST"])
    return app


def hypercorn_config(host: str, port: int) -> Config:
    """Hypercorn config: one bind, no access log, warnings only, 1 s graceful timeout."""
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.loglevel = "WARNING"
    config.graceful_timeout = 1.0
    return config


async def serve_sim(
    script: SimScript,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``script`` until cancelled (or until ``shutdown_trigger`` returns, then shut down gracefully).

    Reports ``task_status.started(base_url)`` once listening, ``base_url`` being the API base a client
    uses, e.g. ``http://127.0.0.1:43117/v1``. Raises ``OSError`` if the address cannot be bound.
    Cancellation stops the server at once; in-flight streams are cut.
    """
    app = create_sim_app(script)
    config = hypercorn_config(host, port)
    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(partial(serve, app, config, shutdown_trigger=shutdown_trigger))
        task_status.started(binds[0] + "/v1")
