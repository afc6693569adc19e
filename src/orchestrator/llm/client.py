"""Streaming Responses-API client over httpx under trio: stall deadlines, retry with backoff.

Every failure below this module becomes one of three outcomes — a ``Turn``, a ``ContextRejected``
(the prompt did not fit; carries the endpoint's reported prompt size) or ``Unavailable`` (every attempt
failed). httpx exceptions never leave this module.

Deadlines are trio scopes: ``headers_deadline`` bounds the wait for response headers, and
``chunk_idle`` is pushed forward on every streamed chunk, so a slow generation that keeps producing
bytes is never cut. Cancellation from outside (a plan modification, shutdown) propagates unchanged
after the response is closed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx
import msgspec
import trio

from orchestrator.errors import ConfigError
from orchestrator.llm.sse import SseDecoder
from orchestrator.llm.wire import AttemptFailed, DeltaField, FailureCause, ResponsesRequest, Turn, TurnAssembler

__all__ = [
    "ContextRejected",
    "LlmClient",
    "LlmTimeouts",
    "OnRetry",
    "Publish",
    "RetryNotice",
    "TurnOutcome",
    "Unavailable",
    "deterministic_http_error",
    "timeouts_from_env",
]

#: ``publish(field, text, reset)``: one streamed delta; ``reset`` marks the first delta of an attempt.
Publish = Callable[[DeltaField, str, bool], None]


class RetryNotice(msgspec.Struct, frozen=True, kw_only=True):
    """One failed attempt that will be retried after ``delay_seconds``.

    ``attempt`` counts the attempts made so far (1-based) out of ``attempts``; a ``loading`` failure
    (the server answered ``503 Loading model``) is waited out without using up an attempt.
    """

    attempt: int
    attempts: int
    cause: FailureCause
    message: str
    delay_seconds: float


#: Told about every failed attempt that will be retried (the engine logs it); must not raise.
OnRetry = Callable[[RetryNotice], None]


class ContextRejected(msgspec.Struct, kw_only=True):
    """The endpoint refused the request as too long for its context window."""

    prompt_tokens: int | None
    message: str


class Unavailable(msgspec.Struct, kw_only=True):
    """No usable turn after ``attempts`` tries; ``message`` says what the last attempt saw."""

    message: str
    attempts: int


TurnOutcome = Turn | ContextRejected | Unavailable


@dataclass(frozen=True)
class LlmTimeouts:
    """Stall bounds and retry pacing. Defaults follow the seed: 30 s headers, 120 s idle stream."""

    headers_seconds: float = 30.0
    idle_seconds: float = 120.0
    attempts: int = 4
    backoff_seconds: float = 1.0
    backoff_cap_seconds: float = 30.0
    #: How long a server answering ``503 Loading model`` is waited for before the turn gives up.
    load_wait_seconds: float = 600.0


_HTTPX_TIMEOUT = httpx.Timeout(connect=10.0, read=None, write=30.0, pool=30.0)
#: An idle pooled connection is dropped after this long. llama-server closes idle connections after 5 s,
#: httpx's own default; at equal bounds a request could reuse a connection in the instant the server closes
#: it ("Server disconnected without sending a response", one wasted attempt and a backoff). Found against
#: the real server (tests/realmodel); staying well under its bound costs one reconnect per slow turn.
KEEPALIVE_EXPIRY_SECONDS = 2.0
_HTTPX_LIMITS = httpx.Limits(keepalive_expiry=KEEPALIVE_EXPIRY_SECONDS)
_json = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()
_TOKENS_IN_MESSAGE = re.compile(r"(\d+)\s+tokens")
_LOADING = re.compile(rb"loading model", re.IGNORECASE)
#: HTTP error text kept: the head and the tail (llama-server puts the cause at the end).
ERROR_HEAD, ERROR_TAIL = 200, 600


class LlmClient:
    """One endpoint's client. Owns an ``httpx.AsyncClient``; use as an async context manager."""

    def __init__(self, api_base: str, *, api_key: str | None = None, timeouts: LlmTimeouts | None = None) -> None:
        self.url = api_base.rstrip("/") + "/responses"
        self.timeouts = timeouts or LlmTimeouts()
        headers = {"Accept": "text/event-stream", "Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.AsyncClient(timeout=_HTTPX_TIMEOUT, limits=_HTTPX_LIMITS, headers=headers)

    async def __aenter__(self) -> LlmClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True):
            await self._http.aclose()

    async def complete(
        self, request: ResponsesRequest, publish: Publish | None = None, on_retry: OnRetry | None = None
    ) -> TurnOutcome:
        """Run one model turn, retrying failed attempts with exponential backoff.

        ``on_retry`` hears about every failed attempt that is retried (before the pause). A server
        still loading its model (``503 Loading model``) is waited for up to ``load_wait_seconds``
        without using up attempts. A completion that used the whole ``max_output_tokens`` counts as
        a ``length`` finish whatever status the server reported.

        Cancellation: propagates; the open response is closed first, so the server sees a disconnect.
        """
        body = _encoder.encode(request)
        last = "no attempt made"
        limits = self.timeouts
        attempt = 0
        loading_waited, loading_waits = 0.0, 0
        while attempt < limits.attempts:
            attempt += 1
            try:
                return await self._attempt(body, publish, request.max_output_tokens)
            except _Rejected as rejected:
                return ContextRejected(prompt_tokens=rejected.prompt_tokens, message=str(rejected))
            except AttemptFailed as failure:
                last = str(failure)
                if not failure.retry:
                    return Unavailable(message=last, attempts=attempt)
                cause = failure.cause
            if cause == "loading" and loading_waited < limits.load_wait_seconds:
                attempt -= 1  # waiting for a model to load is not a failed attempt
                delay = min(limits.backoff_cap_seconds, limits.backoff_seconds * 2 ** min(loading_waits, 16))
                delay = min(delay, limits.load_wait_seconds - loading_waited)
                loading_waits += 1
                loading_waited += delay
            elif attempt < limits.attempts:
                delay = min(limits.backoff_cap_seconds, limits.backoff_seconds * 2 ** (attempt - 1))
            else:
                break
            if on_retry is not None:
                on_retry(
                    RetryNotice(
                        attempt=attempt, attempts=limits.attempts, cause=cause, message=last, delay_seconds=delay
                    )
                )
            await trio.sleep(delay)
        return Unavailable(message=last, attempts=attempt)

    async def _attempt(self, body: bytes, publish: Publish | None, max_output_tokens: int | None) -> Turn:
        limits = self.timeouts
        request = self._http.build_request("POST", self.url, content=body)
        with trio.move_on_after(limits.headers_seconds) as headers_deadline:
            try:
                response = await self._http.send(request, stream=True)
            except httpx.HTTPError as exc:
                raise AttemptFailed(f"request failed: {type(exc).__name__}: {exc}", cause="network") from exc
        if headers_deadline.cancelled_caught:
            raise AttemptFailed(f"no response headers within {limits.headers_seconds:g}s", cause="stall")
        try:
            if response.status_code != 200:
                raise await self._http_error(response)
            return await self._read_stream(response, publish, max_output_tokens)
        finally:
            with trio.CancelScope(shield=True):
                await response.aclose()

    async def _read_stream(
        self, response: httpx.Response, publish: Publish | None, max_output_tokens: int | None
    ) -> Turn:
        limits = self.timeouts
        first = True

        def on_delta(field: DeltaField, text: str) -> None:
            nonlocal first
            if publish is not None:
                publish(field, text, first)
            first = False

        decoder = SseDecoder()
        assembler = TurnAssembler(on_delta)
        turn: Turn | None = None
        with trio.CancelScope(deadline=trio.current_time() + limits.idle_seconds) as chunk_idle:
            try:
                async for chunk in response.aiter_raw():
                    chunk_idle.deadline = trio.current_time() + limits.idle_seconds
                    for event in decoder.feed(chunk):
                        turn = assembler.feed(event.event, event.data) or turn
                for event in decoder.flush():
                    turn = assembler.feed(event.event, event.data) or turn
            except httpx.HTTPError as exc:
                raise AttemptFailed(f"stream broke: {type(exc).__name__}: {exc}") from exc
        if chunk_idle.cancelled_caught:
            raise AttemptFailed(f"stream idle for {limits.idle_seconds:g}s", cause="stall")
        if turn is None:
            raise AttemptFailed("stream ended without a terminal response event")
        if (
            max_output_tokens
            and turn.usage.completion_tokens >= max_output_tokens
            and turn.finish_reason in ("stop", "tool_calls")
        ):
            # llama-server reports `completed` even when the budget cut the completion off.
            turn.finish_reason = "length"
        if not turn.content and not turn.tool_calls:
            if turn.finish_reason == "length":
                raise AttemptFailed(
                    "the completion budget was used up before any content (finish_reason length); "
                    "raise model.generation.maxTokens",
                    retry=False,
                )
            raise AttemptFailed(f"empty completion (finish_reason {turn.finish_reason})", cause="empty")
        if turn.finish_reason == "error":
            raise AttemptFailed("endpoint finished the turn with an error")
        return turn

    async def _http_error(self, response: httpx.Response) -> Exception:
        limits = self.timeouts
        with trio.move_on_after(limits.idle_seconds):
            try:
                raw = await response.aread()
            except httpx.HTTPError:
                raw = b""
        rejected = _context_rejection(response.status_code, raw)
        if rejected is not None:
            return rejected
        status = response.status_code
        cause: FailureCause = "loading" if status == 503 and _LOADING.search(raw) else "http"
        if deterministic_http_error(status, raw):
            note = " (not retried: the same request fails the same way)"
            return AttemptFailed(f"HTTP {status}{note}: {error_excerpt(raw)}", cause=cause, retry=False)
        return AttemptFailed(f"HTTP {status}: {error_excerpt(raw)}", cause=cause)


#: Client errors worth another attempt: a timeout, a conflict, "too early", rate limiting. Every other 4xx
#: is the request's own fault and is answered the same again.
_TRANSIENT_CLIENT_STATUSES = frozenset({408, 409, 425, 429})
#: What a server error's body says when the request itself cannot be rendered: llama-server answers 500
#: for a chat-template exception (minja's "Jinja Exception", "System message must be at the beginning")
#: and for tool-call arguments or a tools parameter it cannot take, every time the same request comes.
_DETERMINISTIC_BODY = re.compile(
    rb"jinja exception|chat template|failed to parse tool call|tools param requires|"
    rb"must be at the beginning|invalid_request_error|not_supported_error",
    re.IGNORECASE,
)


def deterministic_http_error(status: int, body: bytes) -> bool:
    """Whether an HTTP error answer would come back the same for the same request (so retrying is waste).

    By status: a 4xx other than 408/409/425/429, or a 501/505. By body: a 500 whose text is a template or
    request-shape failure (see ``_DETERMINISTIC_BODY``). A bare 500, 502, 503 (loading or not), 504 are
    transient. (A context rejection never gets here: it is recognised first.)
    """
    if 400 <= status < 500:
        return status not in _TRANSIENT_CLIENT_STATUSES
    if status == 500:
        return _DETERMINISTIC_BODY.search(body) is not None
    return status in (501, 505)


def error_excerpt(raw: bytes) -> str:
    """An HTTP error body for a message: whole if short, else its head and its tail around an ellipsis.

    llama-server puts the cause of a template failure at the end of a long message.
    """
    text = raw.decode("utf-8", "replace")
    if len(text) <= ERROR_HEAD + ERROR_TAIL + 20:
        return text
    return f"{text[:ERROR_HEAD]} … [{len(text) - ERROR_HEAD - ERROR_TAIL} chars] … {text[-ERROR_TAIL:]}"


class _Rejected(Exception):
    def __init__(self, message: str, prompt_tokens: int | None) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens


def _context_rejection(status: int, raw: bytes) -> _Rejected | None:
    """Recognise llama-server's ``exceed_context_size_error`` and OpenAI's ``context_length_exceeded``."""
    if status not in (400, 413):
        return None
    try:
        body = _json.decode(raw)
    except msgspec.DecodeError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None
    message = str(error.get("message") or "prompt exceeds the context window")
    if error.get("type") == "exceed_context_size_error":
        tokens = error.get("n_prompt_tokens")
        return _Rejected(message, tokens if isinstance(tokens, int) else None)
    if error.get("code") == "context_length_exceeded" or error.get("type") == "context_length_exceeded":
        found = _TOKENS_IN_MESSAGE.findall(message)
        return _Rejected(message, int(found[-1]) if found else None)
    return None


_TIMEOUT_VARIABLES = {
    "ORCHESTRATOR_STALL_HEADERS_SECONDS": "headers_seconds",
    "ORCHESTRATOR_STALL_IDLE_SECONDS": "idle_seconds",
    "ORCHESTRATOR_LLM_BACKOFF_SECONDS": "backoff_seconds",
}


def timeouts_from_env(env: Mapping[str, str]) -> LlmTimeouts:
    """Stall bounds and backoff from the environment (slow hardware, tests); unset or empty = default.

    Raises ``ConfigError`` naming the variable when a value is not a finite positive number.
    """
    values: dict[str, float] = {}
    problems: list[str] = []
    for variable, attribute in _TIMEOUT_VARIABLES.items():
        text = env.get(variable, "")
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0 or text.strip() != text:
            problems.append(f"{variable}={text!r}: expected a positive number of seconds")
        else:
            values[attribute] = value
    if problems:
        raise ConfigError(problems)
    return LlmTimeouts(**values)
