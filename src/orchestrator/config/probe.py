"""The startup model probe: ask ``GET {apiBase}/models`` once, then complete the model's name and window.

The fetch (:func:`fetch_models`) turns every failure into a value: an unreachable endpoint, a timeout, an
HTTP error status or an unparseable body all mean "boot on the configured values". The resolution
(:func:`resolve_model`) is pure: an API-reported context window (``meta.n_ctx`` or a catalog entry's
``context_length``) always replaces the configured one; a missing name is discovered only when exactly
one model is served; a field still missing afterwards is a ``ConfigError`` that says whether the API
could not be probed or did not report it, and where to set the value.
"""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
import trio

from orchestrator.config.deployment import ModelConfig
from orchestrator.config.secrets import scrub
from orchestrator.config.settings import Settings
from orchestrator.errors import ConfigError

__all__ = [
    "DEFAULT_PROBE_TIMEOUT",
    "ProbeOutcome",
    "ServedModel",
    "fetch_models",
    "parse_model_list",
    "probe_model",
    "resolve_model",
]

DEFAULT_PROBE_TIMEOUT = 5.0

_WHERE = {
    "name": ("model.name", "ORCHESTRATOR_MODEL"),
    "contextWindow": ("model.contextWindow", "ORCHESTRATOR_MODEL_CONTEXT_WINDOW"),
}


class ServedModel(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of the model listing: its id and the context window it reports, if any."""

    id: str
    context_window: int | None = None


class ProbeOutcome(msgspec.Struct, frozen=True, kw_only=True):
    """What the probe saw: the listing on success (possibly empty), else ``None`` and the reason."""

    url: str
    models: list[ServedModel] | None = None
    failure: str | None = None

    def describe(self) -> str:
        """One startup note stating the outcome (never the API key: it travels in a header only)."""
        if self.models is None:
            return f"model probe: GET {self.url} failed ({self.failure}); booting on the configured values"
        ids = ", ".join(f"`{m.id}`" for m in self.models[:10]) or "none"
        more = f" and {len(self.models) - 10} more" if len(self.models) > 10 else ""
        return f"model probe: GET {self.url} listed {len(self.models)} model(s): {ids}{more}"


async def probe_model(settings: Settings, *, timeout: float = DEFAULT_PROBE_TIMEOUT) -> Settings:  # noqa: ASYNC109
    """Probe the model API once and return new settings with ``name`` and ``context_window`` resolved.

    The outcome and every resolution decision are appended to ``notes``. Bounded by ``timeout`` seconds
    overall. Cancellation: nothing is changed; the caller's settings stay as they were.
    Raises: ``ConfigError`` when a needed field is still missing or several models are served unnamed.
    """
    model = settings.deployment.model
    outcome = await fetch_models(model.api_base, settings.api_key, seconds=timeout)
    resolved, notes, problems = resolve_model(model, outcome)
    if problems:
        raise ConfigError(scrub(problems, settings.api_key))
    deployment = msgspec.structs.replace(settings.deployment, model=resolved)
    notes = scrub([outcome.describe(), *notes], settings.api_key)
    return msgspec.structs.replace(settings, deployment=deployment, notes=[*settings.notes, *notes])


async def fetch_models(api_base: str, api_key: str | None, *, seconds: float) -> ProbeOutcome:
    """``GET {api_base}/models`` once, bounded by ``seconds`` overall; never raises for I/O failures.

    Sends ``Authorization: Bearer <key>`` when a key is set. Cancellation: propagates (nothing to undo).
    """
    url = api_base.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    failure = f"no answer within {seconds:g}s"
    with trio.move_on_after(seconds):
        try:
            async with httpx.AsyncClient(timeout=seconds) as client:
                response = await client.get(url, headers=headers)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            return ProbeOutcome(url=url, failure=_describe_error(exc))
        if not response.is_success:
            return ProbeOutcome(url=url, failure=f"HTTP {response.status_code}")
        try:
            return ProbeOutcome(url=url, models=parse_model_list(response.content))
        except ValueError as exc:
            return ProbeOutcome(url=url, failure=f"unparseable body: {exc}")
    return ProbeOutcome(url=url, failure=failure)


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
