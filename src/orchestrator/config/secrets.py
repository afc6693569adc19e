"""Secrets: where they come from, which values count as secret, and keeping them out of sight.

* Lookup: an environment variable first, then Docker secret files, trimmed, empty meaning unset. A
  resolved value is returned to the caller and nowhere else: problems and descriptions name only the
  variable or the file a secret came from, never its content.
* ``tool_environment`` (pure): the environment a tool subprocess gets — the orchestrator's own secrets
  and every variable whose name looks secret removed, unless ``ORCHESTRATOR_TOOL_ENV_ALLOW`` names it.
* ``Redactor`` (pure): replaces every known secret value in text with ``<redacted>``; costs one
  substring scan per value when nothing matches. ``load_redactor`` gathers the values (reads files).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import msgspec

from orchestrator.config.overridetable import ENV_OVERRIDES

__all__ = [
    "API_KEY_FILES",
    "API_KEY_VARIABLE",
    "DEFAULT_SECRETS_DIR",
    "KAGI_KEY_FILES",
    "KAGI_KEY_VARIABLE",
    "MIN_SCRUB_LENGTH",
    "REDACTED",
    "SECRET_FILES",
    "TOKEN_FILES",
    "TOKEN_VARIABLE",
    "TOOL_ENV_ALLOW_VARIABLE",
    "WORKSPACE_TOKEN_FILE",
    "Redactor",
    "Secret",
    "load_redactor",
    "looks_secret",
    "read_api_key",
    "read_secret",
    "scrub",
    "secret_values",
    "tool_environment",
]

#: The deployment overrides: configuration, whatever their names say.
_OVERRIDE_VARIABLES = frozenset(row.variable for row in ENV_OVERRIDES)

DEFAULT_SECRETS_DIR = Path("/run/secrets")
API_KEY_VARIABLE = "ORCHESTRATOR_API_KEY"
#: Looked up in this order inside the secrets directory, after the environment variable.
API_KEY_FILES: tuple[str, ...] = ("orchestrator_api_key", "ORCHESTRATOR_API_KEY")
KAGI_KEY_VARIABLE = "ORCHESTRATOR_KAGI_API_KEY"
KAGI_KEY_FILES: tuple[str, ...] = ("kagi_api_key", "ORCHESTRATOR_KAGI_API_KEY")
#: The service's access token (the HTTP perimeter reads it; here it is only kept secret). The secret
#: files are scrubbed when present; ``serve`` itself reads the variable and the workspace token file.
TOKEN_VARIABLE = "ORCHESTRATOR_TOKEN"
TOKEN_FILES: tuple[str, ...] = ("orchestrator_token", "ORCHESTRATOR_TOKEN")
#: Each orchestrator secret: its variable and its Docker secret file names.
SECRET_FILES: dict[str, tuple[str, ...]] = {
    API_KEY_VARIABLE: API_KEY_FILES,
    KAGI_KEY_VARIABLE: KAGI_KEY_FILES,
    TOKEN_VARIABLE: TOKEN_FILES,
}
#: The per-workspace token file ``serve`` keeps when ``ORCHESTRATOR_TOKEN`` is not set.
WORKSPACE_TOKEN_FILE = Path(".orchestration") / "token"
#: Comma-separated names of variables a tool subprocess may keep although their names look secret.
TOOL_ENV_ALLOW_VARIABLE = "ORCHESTRATOR_TOOL_ENV_ALLOW"
#: A variable whose name contains one of these (any case) is stripped from a tool's environment.
_SECRET_NAME = re.compile("KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
#: Variables that hold credentials although their names do not say so (the OTLP exporter's headers).
_SECRET_VARIABLES = frozenset({"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"})
#: The one replacement text, in rendered configuration and in redacted text alike.
REDACTED = "<redacted>"
#: Shorter values are not scrubbed from text: replacing every "x" (or "true") would garble messages,
#: and a value that short protects nothing.
MIN_SCRUB_LENGTH = 8


class Secret(msgspec.Struct, frozen=True, kw_only=True):
    """A resolved secret and where it came from (``source`` is a variable name or a file path)."""

    value: str
    source: str

    def __repr__(self) -> str:
        return f"Secret(value={REDACTED!r}, source={self.source!r})"


def read_secret(
    env: Mapping[str, str], variable: str, file_names: Sequence[str], secrets_dir: Path
) -> tuple[Secret | None, list[str]]:
    """The first non-empty of ``env[variable]`` and ``secrets_dir/<name>`` for each name, trimmed.

    A secret file that exists but cannot be read is a problem (naming the path), not a silent skip.
    """
    value = env.get(variable, "").strip()
    if value:
        return Secret(value=value, source=variable), []
    for name in file_names:
        path = secrets_dir / name
        try:
            text = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            return None, [f"{path}: the secret file cannot be read ({reason})"]
        if text:
            return Secret(value=text, source=str(path)), []
    return None, []


def read_api_key(env: Mapping[str, str], secrets_dir: Path = DEFAULT_SECRETS_DIR) -> tuple[Secret | None, list[str]]:
    """The model API key: ``ORCHESTRATOR_API_KEY``, then ``orchestrator_api_key``, then ``ORCHESTRATOR_API_KEY``."""
    return read_secret(env, API_KEY_VARIABLE, API_KEY_FILES, secrets_dir)


def scrub(texts: list[str], secret: str | None) -> list[str]:
    """``texts`` with every occurrence of ``secret`` replaced by ``REDACTED``.

    The backstop for values we echo (a mistyped variable, a bad enum value in a file): if an operator
    pastes the key into the wrong place, the message shows where without showing the key.
    """
    return Redactor([secret] if secret else []).redact_all(texts)


def looks_secret(name: str) -> bool:
    """Whether a variable's name marks it secret: it contains KEY, TOKEN, SECRET or PASSWORD (any case),
    or it is one of the OTLP headers variables (collector credentials).

    The deployment overrides are configuration, not secrets, whatever their names say
    (``ORCHESTRATOR_MAX_TOKENS``, ``ORCHESTRATOR_INTERRUPT_EVERY_TOKENS``).
    """
    if name in _SECRET_VARIABLES:
        return True
    return _SECRET_NAME.search(name) is not None and name not in _OVERRIDE_VARIABLES


def _allow_list(env: Mapping[str, str]) -> frozenset[str]:
    return frozenset(name.strip() for name in env.get(TOOL_ENV_ALLOW_VARIABLE, "").split(",") if name.strip())


def tool_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the secrets, for a tool subprocess.

    Removed: ``ORCHESTRATOR_API_KEY``, ``ORCHESTRATOR_KAGI_API_KEY``, ``ORCHESTRATOR_TOKEN`` (always), and
    every variable whose name :func:`looks_secret` unless ``ORCHESTRATOR_TOOL_ENV_ALLOW`` names it exactly.
    """
    allowed = _allow_list(env)
    return {
        name: value
        for name, value in env.items()
        if name not in SECRET_FILES and (name in allowed or not looks_secret(name))
    }


class Redactor:
    """Replaces each known secret value in text with ``<redacted>``; values shorter than
    ``MIN_SCRUB_LENGTH`` are ignored. An empty redactor returns its input unchanged at no cost.

    Overlapping or adjacent occurrences (of one value or of two) become one ``<redacted>``, so no
    fragment of a secret survives next to the marker. ``needles`` are the UTF-8 bytes to look for in
    encoded JSON: each value and its JSON-escaped form.
    """

    __slots__ = ("_values", "needles")

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values: tuple[str, ...] = tuple(
            sorted({v for v in values if len(v) >= MIN_SCRUB_LENGTH}, key=len, reverse=True)
        )
        needles = {v.encode() for v in self._values} | {msgspec.json.encode(v)[1:-1] for v in self._values}
        self.needles: tuple[bytes, ...] = tuple(needles)

    def __bool__(self) -> bool:
        return bool(self._values)

    def __repr__(self) -> str:
        return f"Redactor({len(self._values)} values)"

    @property
    def values(self) -> tuple[str, ...]:
        """The values replaced, longest first."""
        return self._values

    def redact(self, text: str) -> str:
        """``text`` with every known secret replaced (the same object when none occurs).

        One substring search per value; only a hit costs more.
        """
        spans: list[tuple[int, int]] = []
        for value in self._values:
            start = text.find(value)
            while start >= 0:
                spans.append((start, start + len(value)))
                start = text.find(value, start + 1)
        if not spans:
            return text
        spans.sort()
        parts: list[str] = []
        kept_to = 0  # text before this index is emitted (or redacted)
        span_start, span_end = spans[0]
        for start, end in spans[1:]:
            if start <= span_end:  # overlapping or adjacent: one marker
                span_end = max(span_end, end)
                continue
            parts += [text[kept_to:span_start], REDACTED]
            kept_to, span_start, span_end = span_end, start, end
        parts += [text[kept_to:span_start], REDACTED, text[span_end:]]
        return "".join(parts)

    def redact_all(self, texts: Iterable[str]) -> list[str]:
        return [self.redact(text) for text in texts]

    def found_in(self, data: bytes) -> bool:
        """Whether encoded JSON ``data`` holds a secret (raw or JSON-escaped): the log writer's fast check."""
        return any(needle in data for needle in self.needles)

    def redact_value(self, value: object) -> object:
        """A JSON-like value with every string in it (dict keys too) redacted; other leaves unchanged.

        A msgspec struct is turned into builtins first, so the answer is plain data.
        """
        if not self._values:
            return value
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, msgspec.Struct):
            value = msgspec.to_builtins(value)
        if isinstance(value, dict):
            return {self.redact_value(key): self.redact_value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_value(item) for item in value]
        return value


def secret_values(
    env: Mapping[str, str], secrets_dir: Path = DEFAULT_SECRETS_DIR, workspace: Path | None = None
) -> list[str]:
    """Every value that must never surface (reads the secret files; a missing or unreadable one adds nothing).

    The three orchestrator secrets from the environment *and* from their secret files (both, so a key
    mounted as a file and another set in the variable are both kept out), ``<workspace>/.orchestration/token``,
    and the value of every variable whose name :func:`looks_secret` — allow-listed ones included: a tool
    may use them, but their values stay out of the log and the model's context.
    """
    values = [value.strip() for name, value in env.items() if name in SECRET_FILES or looks_secret(name)]
    paths = [secrets_dir / name for names in SECRET_FILES.values() for name in names]
    if workspace is not None:
        paths.append(workspace / WORKSPACE_TOKEN_FILE)
    for path in paths:
        try:
            values.append(path.read_text(encoding="utf-8").strip())
        except (OSError, UnicodeDecodeError):
            continue
    return [value for value in values if value]


def load_redactor(
    env: Mapping[str, str], secrets_dir: Path = DEFAULT_SECRETS_DIR, workspace: Path | None = None
) -> Redactor:
    """A :class:`Redactor` over :func:`secret_values`."""
    return Redactor(secret_values(env, secrets_dir, workspace))
