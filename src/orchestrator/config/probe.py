"""The model probe: ask ``GET {apiBase}/models``, then complete the model's name and window.

The listing is fetched with a few retries and backoff (:func:`fetch_models_retrying`); a server that
answers ``503 Loading model`` can be waited for, each wait told to ``on_notice``. A llama-server's
``GET /props`` is read too: a chat template that cannot render tools (``chat_template_caps``) is a
``tools_problem`` on the resulting :class:`ModelStatus`, and runs refuse to start on it (a run whose
tools are silently dropped can only "succeed" doing nothing). :func:`refresh_model` re-runs the probe
on demand (the service does, before a run, while the last probe failed) and never raises.

The fetch (:func:`fetch_models`) turns every failure into a value: an unreachable endpoint, a timeout, an
HTTP error status or an unparseable body all mean "boot on the configured values". The resolution
(:func:`resolve_model`) is pure: an API-reported context window (``meta.n_ctx`` or a catalog entry's
``context_length``) always replaces the configured one; a missing name is discovered only when exactly
one model is served; a field still missing afterwards is a ``ConfigError`` that says whether the API
could not be probed or did not report it, and where to set the value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import msgspec
import trio

from orchestrator.config.deployment import ModelConfig
from orchestrator.config.redaction import without_userinfo
from orchestrator.config.settings import ModelStatus, Settings
from orchestrator.errors import ConfigError

__all__ = [
    "BOOTING",
    "DEFAULT_PROBE_TIMEOUT",
    "ModelNotReady",
    "Notice",
    "ProbeOutcome",
    "ServedModel",
    "fetch_models",
    "fetch_models_retrying",
    "fetch_tool_support",
    "not_ready_headline",
    "parse_model_list",
    "probe_model",
    "refresh_model",
    "resolve_model",
]

DEFAULT_PROBE_TIMEOUT = 5.0
DEFAULT_PROBE_ATTEMPTS = 3
DEFAULT_PROBE_BACKOFF = 0.5
PROBE_BACKOFF_CAP = 30.0

#: Told about every retry and every wait for a loading model (``check``/``serve`` print it to stderr).
Notice = Callable[[str], None]

TOOLS_PROBLEM = (
    "the model server's chat template cannot render tools (GET {url}: chat_template_caps.supports_tools "
    "is false), so the server drops every tool and no role could ever act; runs refuse to start. Start "
    "llama-server with --jinja and a tool-capable template (--chat-template-file, e.g. llama.cpp's "
    "models/templates/Qwen-Qwen2.5-7B-Instruct.jinja)"
)


class ModelNotReady(ConfigError):
    """Needed model fields are missing because the model API could not be probed (down or loading).

    ``serve`` keeps probing in the background instead of staying on the error page for good; ``check``,
    ``run`` and ``resume`` say :attr:`headline` and exit 3 (not reachable), not 2 (invalid).
    """

    def __init__(self, problems: list[str], status: ModelStatus, *, api_base: str = "") -> None:
        super().__init__(problems)
        self.status = status
        self.api_base = api_base

    @property
    def headline(self) -> str:
        """What is wrong and what to do, in one line (the cause first, the missing fields are consequences)."""
        return not_ready_headline(self.api_base, loading=self.status.loading)


def not_ready_headline(api_base: str, *, loading: bool = False) -> str:
    """The one line for a model server that does not answer (or is still loading its model) at ``api_base``."""
    if loading:
        return f"the model server at {api_base} is still loading its model; wait for it, then try again"
    return (
        f"no model server answers at {api_base}; start one (docs/models.md), set ORCHESTRATOR_API_BASE to "
        "the one you run, or try `orchestrator demo` (a built-in simulated model)"
    )


#: How a failed probe's note ends when the configured values suffice to start on.
BOOTING = "; booting on the configured values"

_WHERE = {
    "name": ("model.name", "ORCHESTRATOR_MODEL"),
    "contextWindow": ("model.contextWindow", "ORCHESTRATOR_MODEL_CONTEXT_WINDOW"),
}


class ServedModel(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of the model listing: its id and the context window it reports, if any."""

    id: str
    context_window: int | None = None


class ProbeOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What the probe saw: the listing on success (possibly empty), else ``None`` and the reason.
    ``url`` is the address asked without its userinfo: every message names it."""

    url: str
    models: list[ServedModel] | None = None
    failure: str | None = None
    #: The HTTP status of a failed fetch, if it got one.
    status: int | None = None
    #: The server answered ``503 Loading model``: it is up, its model is not.
    loading: bool = False

    @property
    def retryable(self) -> bool:
        """A failure another try may fix: no answer, a 5xx (loading included); not a 4xx or a bad body."""
        return (
            self.models is None
            and (self.status is None or self.status >= 500)
            and not (self.failure or "").startswith("unparseable")
        )

    def describe(self) -> str:
        """One startup note stating the outcome (never the API key: it travels in a header only)."""
        if self.models is None:
            return f"model probe: GET {self.url} failed ({self.failure}){BOOTING}"
        ids = ", ".join(f"`{m.id}`" for m in self.models[:10]) or "none"
        more = f" and {len(self.models) - 10} more" if len(self.models) > 10 else ""
        return f"model probe: GET {self.url} listed {len(self.models)} model(s): {ids}{more}"


async def probe_model(
    settings: Settings,
    *,
    timeout: float = DEFAULT_PROBE_TIMEOUT,  # noqa: ASYNC109
    attempts: int = DEFAULT_PROBE_ATTEMPTS,
    backoff_seconds: float = DEFAULT_PROBE_BACKOFF,
    load_wait_seconds: float = 0.0,
    on_notice: Notice | None = None,
) -> Settings:
    """Probe the model API and return new settings with ``name``, ``context_window`` and ``model_status``.

    The listing is fetched up to ``attempts`` times with exponential backoff (``timeout`` seconds
    each); ``503 Loading model`` is waited for up to ``load_wait_seconds`` more. The outcome and every
    resolution decision are appended to ``notes``. Cancellation: nothing is changed.
    Raises: ``ModelNotReady`` when a needed field is missing because the API could not be probed;
    ``ConfigError`` when it is missing otherwise, or several models are served unnamed.
    """
    model = settings.deployment.model
    outcome = await fetch_models_retrying(
        model.api_base,
        settings.api_key,
        seconds=timeout,
        attempts=attempts,
        backoff_seconds=backoff_seconds,
        load_wait_seconds=load_wait_seconds,
        on_notice=on_notice,
    )
    resolved, notes, problems = resolve_model(model, outcome)
    status = ModelStatus(
        reachable=outcome.models is not None,
        message=settings.redactor().redact_all([outcome.describe()])[0],
        loading=outcome.loading,
    )
    if outcome.models is not None:
        problem = await _tools_problem(model.api_base, settings.api_key, timeout)
        if problem is not None:
            status = msgspec.structs.replace(status, tools_problem=problem)
            notes.append(f"WARNING: {problem}")
    if problems:
        if outcome.models is None:  # what the waiting page and its JSON show: no URL's userinfo either
            shown = without_userinfo(settings.redactor().redact(model.api_base))
            said = [without_userinfo(problem) for problem in settings.redactor().redact_all(problems)]
            status = msgspec.structs.replace(status, message=without_userinfo(status.message))
            raise ModelNotReady(said, status, api_base=shown)
        raise ConfigError(settings.redactor().redact_all(problems))
    deployment = msgspec.structs.replace(settings.deployment, model=resolved)
    notes = settings.redactor().redact_all([outcome.describe(), *notes])
    return msgspec.structs.replace(
        settings, deployment=deployment, notes=[*settings.notes, *notes], model_status=status
    )


async def refresh_model(settings: Settings, *, timeout: float = DEFAULT_PROBE_TIMEOUT) -> Settings:  # noqa: ASYNC109
    """Probe again (one attempt, no waiting) and return the updated settings; never raises.

    A probe that still fails, or finds a problem, leaves the model fields as they were and only
    updates ``model_status``. Cancellation: propagates (nothing to undo).
    """
    try:
        return await probe_model(settings, timeout=timeout, attempts=1)
    except ModelNotReady as exc:
        return msgspec.structs.replace(settings, model_status=exc.status)
    except ConfigError as exc:
        message = "; ".join(settings.redactor().redact_all(exc.problems))
        return msgspec.structs.replace(settings, model_status=ModelStatus(reachable=True, message=message))


async def fetch_models_retrying(
    api_base: str,
    api_key: str | None,
    *,
    seconds: float,
    attempts: int = DEFAULT_PROBE_ATTEMPTS,
    backoff_seconds: float = DEFAULT_PROBE_BACKOFF,
    load_wait_seconds: float = 0.0,
    on_notice: Notice | None = None,
) -> ProbeOutcome:
    """``fetch_models`` until it succeeds, a failure is not worth retrying, or the attempts run out.

    A ``503 Loading model`` answer is waited out for up to ``load_wait_seconds`` (on top of the
    attempts, which the waits do not use up). Every retry and wait is told to ``on_notice`` first.
    """
    waited, attempt, waits = 0.0, 0, 0
    while True:
        attempt += 1
        outcome = await fetch_models(api_base, api_key, seconds=seconds)
        if outcome.models is not None:
            return outcome
        if outcome.loading and waited < load_wait_seconds:
            attempt -= 1
            delay = min(PROBE_BACKOFF_CAP, backoff_seconds * 2**waits, load_wait_seconds - waited)
            waits += 1
            waited += delay
            notice = (
                f"model probe: the model server at {outcome.url} is still loading its model; "
                f"waiting ({waited:g}s of up to {load_wait_seconds:g}s)"
            )
        elif attempt < attempts and outcome.retryable:
            delay = min(PROBE_BACKOFF_CAP, backoff_seconds * 2 ** (attempt - 1))
            notice = f"model probe: GET {outcome.url} failed ({outcome.failure}); retrying in {delay:g}s"
        else:
            return outcome
        if on_notice is not None:
            on_notice(notice)
        await trio.sleep(delay)


async def _tools_problem(api_base: str, api_key: str | None, seconds: float) -> str | None:
    supported = await fetch_tool_support(api_base, api_key, seconds=seconds)
    if supported is not False:
        return None
    return TOOLS_PROBLEM.format(url=without_userinfo(_props_url(api_base)))


def _props_url(api_base: str) -> str:
    return api_base.rstrip("/").removesuffix("/v1") + "/props"


async def fetch_tool_support(api_base: str, api_key: str | None, *, seconds: float) -> bool | None:
    """llama-server's ``GET /props`` → ``chat_template_caps.supports_tools``; ``None`` when not reported.

    Any other server (no such route, another shape, no answer) is ``None``: nothing is known.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with trio.move_on_after(seconds):
        try:
            async with httpx.AsyncClient(timeout=seconds) as client:
                response = await client.get(_props_url(api_base), headers=headers)
            document = msgspec.json.decode(response.content) if response.is_success else None
        except (httpx.HTTPError, httpx.InvalidURL, msgspec.DecodeError):
            return None
        caps = document.get("chat_template_caps") if isinstance(document, dict) else None
        supported = caps.get("supports_tools") if isinstance(caps, dict) else None
        return supported if isinstance(supported, bool) else None
    return None


async def fetch_models(api_base: str, api_key: str | None, *, seconds: float) -> ProbeOutcome:
    """``GET {api_base}/models`` once, bounded by ``seconds`` overall; never raises for I/O failures.

    Sends ``Authorization: Bearer <key>`` when a key is set. Cancellation: propagates (nothing to undo).
    """
    url = api_base.rstrip("/") + "/models"
    shown = without_userinfo(url)  # what every message names: the address, never its credentials
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    failure = f"no answer within {seconds:g}s"
    with trio.move_on_after(seconds):
        try:
            async with httpx.AsyncClient(timeout=seconds) as client:
                response = await client.get(url, headers=headers)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            return ProbeOutcome(url=shown, failure=_describe_error(exc))
        if not response.is_success:
            code = response.status_code
            if code == 503 and b"loading model" in response.content.lower():
                return ProbeOutcome(url=shown, failure="HTTP 503: Loading model", status=code, loading=True)
            return ProbeOutcome(url=shown, failure=f"HTTP {code}", status=code)
        try:
            return ProbeOutcome(url=shown, models=parse_model_list(response.content))
        except ValueError as exc:
            return ProbeOutcome(url=shown, failure=f"unparseable body: {exc}")
    return ProbeOutcome(url=shown, failure=failure)


def _describe_error(exc: Exception) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__})"
    detail = str(exc) or "no detail"
    return f"{type(exc).__name__}: {detail}"


def parse_model_list(body: bytes) -> list[ServedModel]:
    """The entries of an OpenAI-compatible ``{"data": [...]}`` listing; ``ValueError`` if it is not one.

    Entries without a non-empty string ``id`` are skipped. The context window is a positive integer at
    ``context_length`` or ``meta.n_ctx`` (``meta`` may be null); anything else counts as not reported.
    """
    try:
        document = msgspec.json.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ValueError(f"not JSON ({exc})") from None
    data = document.get("data") if isinstance(document, dict) else None
    if not isinstance(data, list):
        raise ValueError("expected an object with a `data` array")
    models = []
    for entry in data:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"]:
            models.append(ServedModel(id=entry["id"], context_window=_context_window(entry)))
    return models


def _context_window(entry: dict[str, Any]) -> int | None:
    meta = entry.get("meta")
    candidates = [entry.get("context_length"), meta.get("n_ctx") if isinstance(meta, dict) else None]
    for value in candidates:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def resolve_model(model: ModelConfig, outcome: ProbeOutcome) -> tuple[ModelConfig, list[str], list[str]]:
    """Complete ``model`` from the probe outcome; return it, the notes, and the problems (pure)."""
    notes: list[str] = []
    problems: list[str] = []
    served = outcome.models
    name = model.name
    entry: ServedModel | None = None
    several = False
    if name is not None:
        if served is not None:
            entry = next((m for m in served if m.id == name), None)
            if entry is None and served:
                notes.append(
                    f"model.name `{name}` is not among the served ids ({_ids(served)}); using it as configured"
                )
    elif served is not None and len(served) == 1:
        entry = served[0]
        name = entry.id
        notes.append(f"model.name `{name}` discovered from the model API (the only model it serves)")
    elif served:
        several = True
        problems.append(
            f"model.name is not configured and the model API at {outcome.url} serves several models "
            f"({_ids(served)}): set `model.name` in the deployment file or the ORCHESTRATOR_MODEL "
            "environment variable to one of them"
        )
    else:
        problems.append(_missing("name", outcome))

    context_window = model.context_window
    reported = entry.context_window if entry is not None else None
    if reported is not None:
        if context_window is None:
            notes.append(f"model.contextWindow {reported} reported by the model API")
        elif context_window != reported:
            notes.append(
                f"model.contextWindow overridden by the model API: configured {context_window} → reported {reported}"
            )
        else:
            notes.append(f"model.contextWindow {reported} confirmed by the model API")
        context_window = reported
    elif context_window is None and not several:
        problems.append(_missing("contextWindow", outcome))

    max_tokens = model.generation.max_tokens
    if context_window is not None and max_tokens >= context_window:
        problems.append(
            f"model.generation.maxTokens ({max_tokens}) must be smaller than the model's context window "
            f"({context_window}): lower `model.generation.maxTokens` (or ORCHESTRATOR_MAX_TOKENS), since "
            "the completion budget shares the window with the prompt"
        )
    resolved = msgspec.structs.replace(model, name=name, context_window=context_window)
    return resolved, notes, problems


def _missing(field: str, outcome: ProbeOutcome) -> str:
    path, variable = _WHERE[field]
    if outcome.models is None:
        why = f"the model API could not be probed (GET {outcome.url}: {outcome.failure})"
    else:
        why = f"the model API did not report it (GET {outcome.url})"
    return (
        f"{path} is not configured and {why}: set `{path}` in the deployment file or the "
        f"{variable} environment variable"
    )


def _ids(models: list[ServedModel]) -> str:
    return ", ".join(f"`{m.id}`" for m in models)
