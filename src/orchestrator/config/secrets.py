"""Secrets: where they come from, which values count as secret, and keeping them out of sight.

* Lookup: an environment variable first, then Docker secret files, trimmed, empty meaning unset. A
  resolved value is returned to the caller and nowhere else: problems and descriptions name only the
  variable or the file a secret came from, never its content.
* ``tool_environment`` (pure): the environment a tool subprocess gets — an allow-list (``BASE_TOOL_ENVIRONMENT``,
  the ``LC_*`` locale variables, and the names the deployment's ``toolEnvironment`` or
  ``ORCHESTRATOR_TOOL_ENV_ALLOW`` add); everything else is withheld, the orchestrator's own secrets always.
* ``secret_values``: every value that must never surface — the orchestrator's secrets, every variable whose
  name looks secret, and the value of every withheld variable unless it is plainly not a secret (a path,
  a number, a URL without credentials, a word; see :func:`withheld_value_is_secret`).
* ``Redactor`` (``config.redaction``): replaces those values and credential shapes in text with
  ``<redacted>``. ``load_redactor`` gathers the values (reads files).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import msgspec

from orchestrator.config.overridetable import ENV_OVERRIDES
from orchestrator.config.redaction import MIN_SCRUB_LENGTH, REDACTED, Redactor
from orchestrator.fsutil import read_regular

__all__ = [
    "API_KEY_FILES",
    "API_KEY_VARIABLE",
    "BASE_TOOL_ENVIRONMENT",
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
    "tool_allow_list",
    "tool_environment",
    "withheld_value_is_secret",
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
#: Comma-separated names of further variables a tool subprocess gets (added to ``toolEnvironment``).
TOOL_ENV_ALLOW_VARIABLE = "ORCHESTRATOR_TOOL_ENV_ALLOW"
#: What every tool subprocess gets from the service's environment (with the ``LC_*`` variables); the
#: deployment's ``toolEnvironment`` adds names. Everything else is withheld.
BASE_TOOL_ENVIRONMENT: frozenset[str] = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TZ",
        "TMPDIR",
        "TMP",
        "TEMP",
        "COLUMNS",
        "LINES",
        "NO_COLOR",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "GIT_SSL_CAINFO",
        "NODE_EXTRA_CA_CERTS",
    }
)
#: A variable whose name matches (any case) is secret: withheld from tools unless allowed, and its value
#: redacted even when allowed.
_SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|PWD|DSN|CREDENTIAL|AUTH(?!OR)|COOKIE|SESSION|WEBHOOK|PRIVATE|(?:^|_)PAT(?:$|_)",
    re.IGNORECASE,
)
#: Names that match ``_SECRET_NAME`` but are the shell's own, not secrets.
_ORDINARY_NAMES = frozenset({"PWD", "OLDPWD"})
#: Withheld variables whose values are not secrets by what they are (the shell's, CI's, ours).
_PLAIN_NAMES = frozenset({"PWD", "OLDPWD", "HOSTNAME", "SHLVL", "_"})
_PLAIN_PREFIXES = ("XDG_", "LC_", "GITHUB_", "RUNNER_", "GIT_AUTHOR_", "GIT_COMMITTER_", "ORCHESTRATOR_")
#: Values that are plainly not secrets: absolute paths (or a list of them), numbers and addresses,
#: words of letters, an e-mail address, a URL without credentials or query.
_PLAIN_VALUE = re.compile(
    r"(?:~?/[^\s:]*)(?::~?/[^\s:]*)*:?|[0-9\s.,:;+-]+|[A-Za-z]+(?: [A-Za-z]+)*"
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|[a-z][a-z0-9+.-]*://[^\s@?#]*"
)
#: Variables that hold credentials although their names do not say so (the OTLP exporter's headers).
_SECRET_VARIABLES = frozenset({"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"})


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
    """Whether a variable's name marks it secret: it contains KEY, TOKEN, SECRET, PASSW(ORD), PWD, DSN,
    CREDENTIAL, AUTH, COOKIE, SESSION, WEBHOOK or PRIVATE, or PAT as a word (any case),
    or it is one of the OTLP headers variables (collector credentials).

    ``PWD``/``OLDPWD`` are the shell's; the deployment overrides are configuration, not secrets, whatever
    their names say (``ORCHESTRATOR_MAX_TOKENS``, ``ORCHESTRATOR_INTERRUPT_EVERY_TOKENS``).
    """
    if name in _SECRET_VARIABLES:
        return True
    return _SECRET_NAME.search(name) is not None and name not in _OVERRIDE_VARIABLES and name not in _ORDINARY_NAMES


def tool_allow_list(env: Mapping[str, str], allow: Iterable[str] = ()) -> frozenset[str]:
    """The names a tool subprocess gets: the base list, ``allow`` (the deployment's ``toolEnvironment``)
    and ``ORCHESTRATOR_TOOL_ENV_ALLOW``'s names; never the orchestrator's own secrets."""
    extra = [name.strip() for name in env.get(TOOL_ENV_ALLOW_VARIABLE, "").split(",")]
    return frozenset(name for name in (*BASE_TOOL_ENVIRONMENT, *allow, *extra) if name and name not in SECRET_FILES)


def tool_environment(env: Mapping[str, str], allow: Iterable[str] = ()) -> dict[str, str]:
    """The part of ``env`` a tool subprocess gets: the variables :func:`tool_allow_list` names and the
    ``LC_*`` locale variables. Everything else is withheld."""
    allowed = tool_allow_list(env, allow)
    return {name: value for name, value in env.items() if name in allowed or name.startswith("LC_")}


def withheld_value_is_secret(name: str, value: str) -> bool:
    """Whether the value of a variable withheld from tools counts as secret (and is redacted wherever
    text leaves): yes unless it is shorter than ``MIN_SCRUB_LENGTH``, belongs to a variable known to
    hold none (``PWD``, ``HOSTNAME``, ``XDG_*``, ``LC_*``, ``GITHUB_*``, ``RUNNER_*``, ``GIT_AUTHOR_*``,
    ``GIT_COMMITTER_*``, the orchestrator's configuration) or is plainly not one: a path or a list of
    paths, a number, words of letters, an e-mail address, a URL without credentials or query. A name
    that :func:`looks_secret` makes it secret regardless."""
    value = value.strip()
    if len(value) < MIN_SCRUB_LENGTH:
        return False
    if looks_secret(name) or name in SECRET_FILES:
        return True
    if name in _PLAIN_NAMES or name.startswith(_PLAIN_PREFIXES):
        return False
    return _PLAIN_VALUE.fullmatch(value) is None


def secret_values(
    env: Mapping[str, str],
    secrets_dir: Path = DEFAULT_SECRETS_DIR,
    workspace: Path | None = None,
    allow: Iterable[str] = (),
) -> list[str]:
    """Every value that must never surface (reads the secret files; a missing or unreadable one adds nothing).

    The three orchestrator secrets from the environment *and* from their secret files (both, so a key
    mounted as a file and another set in the variable are both kept out), ``<workspace>/.orchestration/token``,
    the value of every variable whose name :func:`looks_secret` — allow-listed ones included: a tool
    may use them, but their values stay out of the log and the model's context — and the value of every
    variable withheld from tools (``allow``: the deployment's ``toolEnvironment``) that
    :func:`withheld_value_is_secret`.
    """
    allowed = tool_allow_list(env, allow)
    values = [
        value.strip()
        for name, value in env.items()
        if name in SECRET_FILES
        or looks_secret(name)
        or (name not in allowed and not name.startswith("LC_") and withheld_value_is_secret(name, value))
    ]
    paths = [secrets_dir / name for names in SECRET_FILES.values() for name in names]
    if workspace is not None:
        paths.append(workspace / WORKSPACE_TOKEN_FILE)
    for path in paths:
        try:
            values.append(read_regular(path).decode("utf-8").strip())  # a planted FIFO must not hang us
        except (OSError, UnicodeDecodeError):
            continue
    return [value for value in values if value]


def load_redactor(
    env: Mapping[str, str],
    secrets_dir: Path = DEFAULT_SECRETS_DIR,
    workspace: Path | None = None,
    allow: Iterable[str] = (),
) -> Redactor:
    """A :class:`Redactor` over :func:`secret_values` (and the credential shapes)."""
    return Redactor(secret_values(env, secrets_dir, workspace, allow))
