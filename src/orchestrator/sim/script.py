"""The sim-model script: its msgspec Struct tree and the loader that names a bad key's path.

A script is a JSON document (see ``docs/sim-model.md``). Every Struct here is a ``StrictBase``, so an
unknown key fails the load; :func:`load_script` turns msgspec's ``- at `$.turns[0]``` messages into a
:class:`ScriptError` whose ``path`` is the offending key path, e.g. ``turns[0].fial``.
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Any, Literal

import msgspec

from orchestrator.schema import StrictBase

__all__ = [
    "Expect",
    "Fail",
    "Flavor",
    "ModelsSpec",
    "ScriptError",
    "SimScript",
    "ToolCall",
    "Turn",
    "Usage",
    "load_script",
    "parse_script",
]

NonNegInt = Annotated[int, msgspec.Meta(ge=0)]
PosInt = Annotated[int, msgspec.Meta(ge=1)]
HttpErrorStatus = Annotated[int, msgspec.Meta(ge=400, le=599)]
HttpStatus = Annotated[int, msgspec.Meta(ge=100, le=599)]


class ScriptError(ValueError):
    """A sim script failed to load. ``path`` is the bad key path (``turns[0].fial``), or "" for the root."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class Expect(StrictBase):
    """Conditions a request must meet for a turn to answer it; all given conditions must hold."""

    system_contains: str | None = None
    last_input_contains: str | None = None
    input_contains: str | None = None
    tools_include: list[str] | None = None


class ToolCall(StrictBase):
    """One function call the turn emits: ``arguments`` (encoded compactly) or ``rawArguments`` verbatim."""

    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None

    def __post_init__(self) -> None:
        if self.arguments is not None and self.raw_arguments is not None:
            raise ValueError("give `arguments` or `rawArguments`, not both")


class Usage(StrictBase):
    """Token usage to report; a missing field is filled from the estimate."""

    prompt_tokens: NonNegInt | None = None
    completion_tokens: NonNegInt | None = None
    cached_prompt_tokens: NonNegInt | None = None


class Fail(StrictBase):
    """How the turn fails. Exactly one mode: status, contextExceeded, a stall, or empty."""

    status: HttpErrorStatus | None = None
    #: The error body's message for a ``status`` failure (default: a "scripted failure" note).
    message: str | None = None
    context_exceeded: bool = False
    prompt_tokens: NonNegInt | None = None
    stall_before_headers_ms: NonNegInt | None = None
    stall_mid_stream_ms: NonNegInt | None = None
    empty: bool = False

    def __post_init__(self) -> None:
        modes = [
            name
            for name, on in (
                ("status", self.status is not None),
                ("contextExceeded", self.context_exceeded),
                ("stallBeforeHeadersMs", self.stall_before_headers_ms is not None),
                ("stallMidStreamMs", self.stall_mid_stream_ms is not None),
                ("empty", self.empty),
            )
            if on
        ]
        if len(modes) != 1:
            found = ", ".join(modes) or "none"
            raise ValueError(
                "give exactly one of status, contextExceeded, stallBeforeHeadersMs, stallMidStreamMs, "
                f"empty (found: {found})"
            )
        if self.prompt_tokens is not None and not self.context_exceeded:
            raise ValueError("`promptTokens` only goes with `contextExceeded`")
        if self.message is not None and self.status is None:
            raise ValueError("`message` only goes with `status`")


class Turn(StrictBase):
    """One scripted model reply."""

    expect: Expect | None = None
    reusable: bool = False
    reasoning: str | None = None
    content: str | None = None
    tool_calls: list[ToolCall] = []
    usage: Usage | None = None
    finish_reason: Literal["stop", "length", "error"] = "stop"
    fail: Fail | None = None
    chunk_chars: PosInt = 16
    chunk_delay_ms: NonNegInt = 0


class ModelsSpec(StrictBase):
    """What ``GET /v1/models`` answers. ``ids`` absent means ``[script.model]``."""

    ids: list[str] | None = None
    report: Literal["meta", "context_length", "none"] = "meta"
    status: HttpStatus = 200


class Flavor(StrictBase, frozen=True):
    """Whose wire habits the sim imitates (see ``docs/sim-model.md``, "Flavors").

    ``openai`` (the default) follows the OpenAI Responses API to the letter; ``llama-server`` reproduces
    what llama.cpp's server was observed to send. The other keys only matter for ``llama-server``.
    """

    name: Literal["openai", "llama-server"] = "openai"
    #: Answer ``503 Loading model`` on every endpoint for this long after the server started.
    loading_ms: NonNegInt = 0
    #: The chat template refuses a system message after position 0 (Qwen3.5-style): HTTP 500.
    system_first: bool = False
    #: ``GET /props`` reports a chat template that can render tools (``chat_template_caps``).
    supports_tools: bool = True
    #: The model id ``/v1/models`` lists (llama-server lists the ``-m`` path); default ``/models/<model>.gguf``.
    model_path: str | None = None
    #: Parallel slots (``-np``): reported by ``/props``; ``contextWindow`` is the per-slot ``n_ctx``.
    parallel: PosInt = 1
    #: The training context ``/v1/models`` reports as ``meta.n_ctx_train``.
    n_ctx_train: PosInt = 8192


class SimScript(StrictBase):
    """A whole script: the model's identity, its context window, and the ordered turns."""

    model: str = "sim"
    flavor: Flavor = Flavor()
    context_window: PosInt = 32768
    chars_per_token: Annotated[float, msgspec.Meta(gt=0)] = 4
    on_exhausted: Literal["error", "finish"] = "error"
    models: ModelsSpec | None = None
    turns: list[Turn] = []

    @property
    def llama(self) -> bool:
        """True for the ``llama-server`` flavor."""
        return self.flavor.name == "llama-server"

    def model_ids(self) -> list[str]:
        """The ids ``GET /v1/models`` lists."""
        if self.llama and (self.models is None or self.models.ids is None):
            return [self.flavor.model_path or f"/models/{self.model}.gguf"]
        if self.models is None or self.models.ids is None:
            return [self.model]
        return list(self.models.ids)

    def models_spec(self) -> ModelsSpec:
        """The ``models`` block with its defaults applied."""
        return self.models if self.models is not None else ModelsSpec()


_DECODER = msgspec.json.Decoder(SimScript)
_AT = re.compile(r"^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_NAMED_KEY = re.compile(r"(?:unknown|missing required) field `(?P<key>[^`]*)`")


def _script_error(exc: msgspec.MsgspecError) -> ScriptError:
    text = str(exc)
    m = _AT.match(text)
    msg, path = (m.group("msg"), m.group("path") or "") if m else (text, "")
    path = path.removeprefix(".")
    named = _NAMED_KEY.search(msg)
    if named:
        key = named.group("key")
        path = f"{path}.{key}" if path else key
    where = path or "<root>"
    return ScriptError(f"invalid sim script at {where}: {msg}", path)


def parse_script(data: bytes | bytearray | memoryview | str) -> SimScript:
    """Decode script JSON text.

    Raises :class:`ScriptError` (a ``ValueError``) naming the bad key path on invalid JSON, an unknown key,
    a wrong type, or an inconsistent ``fail``/``toolCalls`` entry.
    """
    try:
        return _DECODER.decode(data)
    except msgspec.MsgspecError as exc:
        raise _script_error(exc) from None


def load_script(source: str | os.PathLike[str] | bytes | bytearray | memoryview) -> SimScript:
    """Load a script from a file path (``str``/``PathLike``) or from JSON bytes.

    Raises :class:`ScriptError` naming the bad key path when the content is invalid, and ``OSError`` when
    the file cannot be read. Blocking file I/O: call it before serving or from a worker thread.
    """
    if isinstance(source, bytes | bytearray | memoryview):
        return parse_script(source)
    with open(source, "rb") as f:
        data = f.read()
    try:
        return parse_script(data)
    except ScriptError as exc:
        raise ScriptError(f"{os.fspath(source)}: {exc}", exc.path) from None
