"""The reflection model: gepa's ``LanguageModel`` callable, answered through our Responses-API client.

gepa calls it synchronously from its own thread with the rendered reflection prompt; the call hops
back into the driver's trio loop (``trio.from_thread.run``) and asks the endpoint with ``LlmClient``.
gepa's default proposer takes the new component text from the answer's fenced block.

Every answer is kept on disk (``reflections/<sha256 of the prompt>.json``, written atomically), so a
resumed search asks the model nothing it already answered and proposes the same candidates again.
A model that cannot be reached raises ``ReflectionUnavailable`` and is remembered in ``failure``: gepa
swallows a proposer's exceptions, so the driver's stop condition reads ``failure`` and ends the search
(resumable) instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import trio

from orchestrator.conversation import Message
from orchestrator.fsutil import atomic_write
from orchestrator.llm import ContextRejected, LlmClient, LlmTimeouts, Turn, build_request

__all__ = ["ReflectionEndpoint", "ReflectionModel", "ReflectionUnavailable"]

#: the reflection model's output limit (a whole role prompt fits)
MAX_OUTPUT_TOKENS = 8192


class ReflectionUnavailable(Exception):
    """The reflection model did not answer; the message names the endpoint and why."""


class ReflectionEndpoint(msgspec.Struct, frozen=True, kw_only=True):
    api_base: str
    model: str
    api_key: str | None = None
    temperature: float | None = None

    def __repr__(self) -> str:  # the key never reaches a log
        return f"ReflectionEndpoint(api_base={self.api_base!r}, model={self.model!r})"


class _Answer(msgspec.Struct, frozen=True):
    prompt_sha256: str
    answer: str


def _prompt_text(prompt: str | Sequence[Mapping[str, Any]]) -> str:
    if isinstance(prompt, str):
        return prompt
    parts: list[str] = []
    for message in prompt:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return "\n\n".join(parts)


class ReflectionModel:
    """``model(prompt) -> str`` for gepa; call it only from a thread started by ``trio.to_thread``."""

    def __init__(self, endpoint: ReflectionEndpoint, cache_dir: Path, timeouts: LlmTimeouts | None = None) -> None:
        self.endpoint = endpoint
        self.cache_dir = cache_dir
        self.timeouts = timeouts
        self.calls = 0
        self.cached = 0
        self.failure: ReflectionUnavailable | None = None

    def __call__(self, prompt: str | Sequence[Mapping[str, Any]]) -> str:
        text = _prompt_text(prompt)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        path = self.cache_dir / f"{digest}.json"
        if path.is_file():
            self.cached += 1
            return msgspec.json.decode(path.read_bytes(), type=_Answer).answer
        try:
            answer = trio.from_thread.run(self.ask, text)
        except ReflectionUnavailable as exc:
            self.failure = exc
            raise
        self.calls += 1
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(path, msgspec.json.encode(_Answer(digest, answer)))
        return answer

    async def ask(self, text: str) -> str:
        """One model turn on ``text``; ``ReflectionUnavailable`` when the endpoint does not answer."""
        request = build_request(
            model=self.endpoint.model,
            history=[Message(role="user", content=text)],
            tools=[],
            max_output_tokens=MAX_OUTPUT_TOKENS,
            temperature=self.endpoint.temperature,
        )
        where = f"the reflection model at {self.endpoint.api_base}"
        async with LlmClient(self.endpoint.api_base, api_key=self.endpoint.api_key, timeouts=self.timeouts) as client:
            outcome = await client.complete(request)
        if isinstance(outcome, ContextRejected):
            raise ReflectionUnavailable(f"{where} refused the prompt as too long: {outcome.message}")
        if not isinstance(outcome, Turn):
            raise ReflectionUnavailable(f"{where} did not answer ({outcome.attempts} attempts): {outcome.message}")
        if not outcome.content.strip():
            raise ReflectionUnavailable(f"{where} answered with no text")
        return outcome.content
