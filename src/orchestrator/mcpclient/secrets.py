"""``${NAME}`` references in an MCP server's ``env`` and ``headers``, resolved like the model key.

Each reference is looked up as the environment variable ``NAME``, then the secret files
``<secrets dir>/<name>`` and ``<secrets dir>/<NAME>``. The resolved values are returned separately so
the caller can scrub them from everything the server sends back; a problem names the variable, the
server and the key, never a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from orchestrator.config.secrets import read_secret

__all__ = ["resolve_references"]

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def resolve_references(
    values: Mapping[str, str], where: str, env: Mapping[str, str], secrets_dir: Path
) -> tuple[dict[str, str], list[str], list[str]]:
    """``values`` with every ``${NAME}`` replaced; also the secret values used and the problems.

    ``where`` is the dotted path of the block (``mcpServers.github.env``) for the messages.
    """
    resolved: dict[str, str] = {}
    secrets: list[str] = []
    problems: list[str] = []
    for key, value in values.items():
        pieces: list[str] = []
        position = 0
        for match in _REFERENCE.finditer(value):
            name = match.group(1)
            secret, read_problems = read_secret(env, name, (name.lower(), name), secrets_dir)
            problems.extend(read_problems)
            if secret is None:
                problems.append(
                    f"{where}.{key}: `${{{name}}}` is not set: set the environment variable {name} or provide "
                    f"the secret file {secrets_dir / name.lower()}"
                )
                continue
            pieces.append(value[position : match.start()])
            pieces.append(secret.value)
            secrets.append(secret.value)
            position = match.end()
        pieces.append(value[position:])
        resolved[key] = "".join(pieces)
    return resolved, secrets, problems
