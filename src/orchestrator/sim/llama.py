"""The ``llama-server`` flavor (pure): llama.cpp's server's own ways on the Responses API.

What llama.cpp's ``llama-server`` was observed to do differently from OpenAI (see
``docs/sim-model.md``, "Flavors"): stream events carry no ``output_index``, ``sequence_number`` or
``content_index``; there is no ``function_call_arguments.done`` (the final arguments come in
``output_item.done``); every closing event is batched after all deltas; arguments are spaced JSON
(``{"city": "Rome"}``, not the compact form); ``status`` is always ``completed`` (also when the
completion budget ran out); response objects are minimal plus a ``timings`` object; a failure
mid-stream is a bare ``data: {"error": ...}`` frame without an ``event:`` line. Requests whose history
holds tool-call arguments that are not JSON, or (with ``systemFirst``) a system message after position
0, are refused with HTTP 500 like its template engine does.

No I/O and no trio.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from orchestrator.sim.matching import ResolvedUsage, SimRequest, tool_arguments
from orchestrator.sim.script import SimScript, Turn
from orchestrator.sim.sseframes import SIM_EPOCH, ResponseMeta, SseEvent, StreamPlan, chunks

__all__ = [
    "LOADING_MESSAGE",
    "build_llama_stream",
    "llama_models",
    "llama_props",
    "pretty_arguments",
    "request_problem",
]

LOADING_MESSAGE = "Loading model"
SYSTEM_FIRST_MESSAGE = "System message must be at the beginning."
_ENCODER = msgspec.json.Encoder()


def pretty_arguments(compact: str) -> str:
    """Arguments as llama-server sends them: JSON with a space after every ``:`` and ``,``
    (``{"city": "Rome"}``, as observed); invalid JSON stays verbatim."""
    try:
        return json.dumps(json.loads(compact), ensure_ascii=False)
    except ValueError:
        return compact


def request_problem(request: SimRequest, flavor_system_first: bool) -> str | None:
    """Why llama-server's template step would refuse ``request`` with HTTP 500, or ``None``.

    Tool-call arguments in the history must parse as JSON (llama-server parses them to render the
    template); with ``system_first`` a ``system``/``developer`` message may only be the first item.
    """
    for position, item in enumerate(request.items()):
        if item.type == "function_call":
            try:
                json.loads(item.arguments or "")
            except ValueError as exc:
                return f"Failed to parse tool call arguments as JSON: {exc}"
        if flavor_system_first and position > 0 and item.type == "message" and item.role in ("system", "developer"):
            return f"Jinja Exception: {SYSTEM_FIRST_MESSAGE}"
    return None


def _frame(payload: dict[str, Any]) -> bytes:
    return b"event: " + str(payload["type"]).encode() + b"\ndata: " + _ENCODER.encode(payload) + b"\n\n"


def _error_frame(message: str) -> bytes:
    """llama-server's mid-stream failure: a ``data:`` line without an ``event:`` line."""
    return b"data: " + _ENCODER.encode({"error": {"code": 500, "message": message, "type": "server_error"}}) + b"\n\n"


def _response(meta: ResponseMeta, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": meta.response_id,
        "object": "response",
        "created_at": SIM_EPOCH + meta.number,
        "status": status,
        "model": meta.model,
        "output": output,
    }


def build_llama_stream(
    turn: Turn,
    meta: ResponseMeta,
    usage: ResolvedUsage,
    *,
    first_call: int = 1,
) -> StreamPlan:
    """Every frame llama-server would send for ``turn``.

    ``finishReason: "length"`` still ends ``completed`` with ``output_tokens`` equal to the request's
    ``max_output_tokens`` (when given); ``"error"`` sends the first half of the deltas, then an error
    frame, and no terminal event.
    """
    events: list[SseEvent] = []
    closing: list[dict[str, Any]] = []
    output: list[dict[str, Any]] = []
    n = meta.number

    def emit(payload: dict[str, Any], delta: bool = False) -> None:
        events.append(SseEvent(str(payload["type"]), _frame(payload), delta))

    opening = {"id": meta.response_id, "object": "response", "status": "in_progress"}  # nothing more, as observed
    emit({"type": "response.created", "response": opening})
    emit({"type": "response.in_progress", "response": opening})

    if turn.reasoning:
        item_id = f"rs_{n}_{len(output)}"
        emit({"type": "response.output_item.added", "item": {"id": item_id, "type": "reasoning", "summary": []}})
        for piece in chunks(turn.reasoning, turn.chunk_chars):
            emit({"type": "response.reasoning_text.delta", "item_id": item_id, "delta": piece}, True)
        done = {
            "id": item_id,
            "type": "reasoning",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": turn.reasoning}],
            "status": "completed",
        }
        closing.append({"type": "response.reasoning_text.done", "item_id": item_id, "text": turn.reasoning})
        closing.append({"type": "response.output_item.done", "item": done})
        output.append(done)

    if turn.content:
        msg_id = f"msg_{n}_{len(output)}"
        emit(
            {
                "type": "response.output_item.added",
                "item": {"id": msg_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []},
            }
        )
        emit({"type": "response.content_part.added", "item_id": msg_id, "part": {"type": "output_text", "text": ""}})
        for piece in chunks(turn.content, turn.chunk_chars):
            emit({"type": "response.output_text.delta", "item_id": msg_id, "delta": piece}, True)
        part = {"type": "output_text", "text": turn.content, "annotations": []}
        done = {"id": msg_id, "type": "message", "status": "completed", "role": "assistant", "content": [part]}
        closing.append({"type": "response.output_text.done", "item_id": msg_id, "text": turn.content})
        closing.append({"type": "response.content_part.done", "item_id": msg_id, "part": part})
        closing.append({"type": "response.output_item.done", "item": done})
        output.append(done)

    call_number = first_call
    for call in turn.tool_calls:
        arguments = pretty_arguments(tool_arguments(call))
        fc_id = f"fc_{n}_{len(output)}"
        base = {"id": fc_id, "type": "function_call", "call_id": f"call_{call_number}", "name": call.name}
        call_number += 1
        emit({"type": "response.output_item.added", "item": {**base, "status": "in_progress", "arguments": ""}})
        for piece in chunks(arguments, turn.chunk_chars):
            emit({"type": "response.function_call_arguments.delta", "item_id": fc_id, "delta": piece}, True)
        done = {**base, "status": "completed", "arguments": arguments}
        closing.append({"type": "response.output_item.done", "item": done})
        output.append(done)

    if turn.finish_reason == "error":
        deltas = [i for i, e in enumerate(events) if e.delta]
        cut = deltas[len(deltas) // 2] if deltas else len(events)
        del events[cut:]
        events.append(SseEvent("error", _error_frame("the simulated model failed mid-stream"), False))
        return StreamPlan(events, _response(meta, "failed", output), call_number - first_call)

    for payload in closing:
        emit(payload)
    completion = usage.completion_tokens
    if turn.finish_reason == "length" and meta.max_output_tokens:
        completion = meta.max_output_tokens
    final = {
        **_response(meta, "completed", output),
        "usage": {
            "input_tokens": usage.prompt_tokens,
            "output_tokens": completion,
            "total_tokens": usage.prompt_tokens + completion,
            "input_tokens_details": {"cached_tokens": usage.cached_prompt_tokens},
        },
        "timings": {
            "cache_n": usage.cached_prompt_tokens,
            "prompt_n": usage.prompt_tokens - usage.cached_prompt_tokens,
            "prompt_ms": 1.0,
            "predicted_n": completion,
            "predicted_ms": 1.0,
        },
    }
    emit({"type": "response.completed", "response": final})
    return StreamPlan(events, final, call_number - first_call)


def llama_models(script: SimScript) -> dict[str, Any]:
    """``GET /v1/models`` as llama-server answers it: the ``-m`` path as id, ``meta.n_ctx`` per slot."""
    meta = {
        "vocab_type": 2,
        "n_vocab": 49152,
        "n_ctx_train": script.flavor.n_ctx_train,
        "n_ctx": script.context_window,
        "n_embd": 576,
        "n_params": 134515008,
        "size": 85786112,
    }
    data = [
        {
            "id": model_id,
            "aliases": [],
            "tags": [],
            "object": "model",
            "created": SIM_EPOCH,
            "owned_by": "llamacpp",
            "meta": meta,
        }
        for model_id in script.model_ids()
    ]
    models = [{"name": d["id"], "model": d["id"], "type": "model", "capabilities": ["completion"]} for d in data]
    return {"models": models, "object": "list", "data": data}


def llama_props(script: SimScript) -> dict[str, Any]:
    """``GET /props``: the generation defaults, the slots, and what the chat template can render."""
    flavor = script.flavor
    return {
        "default_generation_settings": {"n_ctx": script.context_window, "params": {"n_predict": -1}},
        "total_slots": flavor.parallel,
        "model_alias": script.model_ids()[0],
        "model_path": script.model_ids()[0],
        "chat_template": "{# sim #}",
        "chat_template_caps": {
            "supports_tools": flavor.supports_tools,
            "supports_tool_calls": flavor.supports_tools,
            "supports_parallel_tool_calls": flavor.supports_tools,
            "supports_system_role": True,
            "supports_preserve_reasoning": False,
        },
        "build_info": "sim",
    }
