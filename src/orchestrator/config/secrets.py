"""Secret lookup: an environment variable first, then Docker secret files, trimmed, empty meaning unset.

A resolved value is returned to the caller and nowhere else: problems and descriptions name only the
variable or the file a secret came from, never its content.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec

__all__ = [
    "API_KEY_FILES",
    "API_KEY_VARIABLE",
    "DEFAULT_SECRETS_DIR",
    "REDACTED",
    "Secret",
    "read_api_key",
    "read_secret",
    "scrub",
]

DEFAULT_SECRETS_DIR = Path("/run/secrets")
API_KEY_VARIABLE = "ORCHESTRATOR_API_KEY"
#: Looked up in this order inside the secrets directory, after the environment variable.
API_KEY_FILES: tuple[str, ...] = ("orchestrator_api_key", "ORCHESTRATOR_API_KEY")
#: What rendered configuration shows in place of a secret that is set.
REDACTED = "<redacted>"
#: Shorter values are not scrubbed from text: replacing every "x" would garble messages, and a value
#: that short protects nothing.
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
    if secret is None or len(secret) < MIN_SCRUB_LENGTH:
        return list(texts)
    return [text.replace(secret, REDACTED) for text in texts]
