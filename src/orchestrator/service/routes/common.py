"""What every route module shares: JSON answers, the error body, the request body, run-folder checks.

Error bodies are ``{"ok": false, "error": <code>}`` with the codes of the seed (``invalid_body``,
``not_found``, ``run_in_progress``, ``run_id_collision``, ``run_not_active``, ``status_forbidden``,
``no_run``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from quart import Response, request

from orchestrator.config.redaction import Redactor
from orchestrator.service.etag import etag_of, matches
from orchestrator.service.foundryruns import FoundryRun, FoundryRuns, is_foundry_id, parse_foundry_id

__all__ = [
    "RunFolders",
    "conditional_json",
    "error_response",
    "json_response",
    "optional_choice",
    "read_body",
]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


def json_response(value: Any, status: int = 200) -> Response:
    return Response(_encoder.encode(value), status=status, content_type="application/json")


def error_response(code: str, status: int) -> Response:
    return json_response({"ok": False, "error": code}, status)


def invalid_parameter(parameter: str, message: str) -> Response:
    """The ``400`` a bad query parameter gets: ``{ok: false, error: "invalid_parameter", parameter, message}``,
    naming the parameter and what it must be."""
    return json_response({"ok": False, "error": "invalid_parameter", "parameter": parameter, "message": message}, 400)


def conditional_json(value: Any) -> Response:
    """``value`` as JSON with its ETag — or an empty ``304`` when the request already holds that tag."""
    body = _encoder.encode(value)
    tag = etag_of(body)
    headers = {"etag": tag, "cache-control": "no-cache"}
    if matches(request.headers.get("if-none-match"), tag):
        return Response(b"", status=304, headers=headers)
    return Response(body, status=200, content_type="application/json", headers=headers)


async def read_body(redactor: Redactor | None = None) -> dict[str, Any] | None:
    """The JSON object body, or ``None`` when it is not one (→ 400 invalid_body).

    ``redactor``: every string in the body is redacted on arrival (a secret typed into a task, an answer
    or a message never reaches ``queue.json``, ``meta.json``, the log, the model or an API answer)."""
    try:
        value = _decoder.decode(await request.get_data(as_text=False) or b"null")
    except (msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    if redactor is not None:
        redacted = redactor.redact_value(value)
        assert isinstance(redacted, dict)
        return redacted
    return value


def optional_choice(body: dict[str, Any], key: str, allowed: tuple[str, ...]) -> tuple[bool, str | None]:
    """``body[key]`` when absent/null (``(True, None)``) or one of ``allowed``; ``ok`` is ``False`` otherwise."""
    value = body.get(key)
    if value is None:
        return True, None
    return (isinstance(value, str) and value in allowed), value if isinstance(value, str) else None


class RunFolders:
    """The run folders the routes address: the workspace's own runs by their run id, and the runs of its
    Foundry searches by their ``foundry~…`` id (``service/foundryruns.py``). ``known`` is the one run-id
    check; ``folder`` of an id ``known`` refuses names no folder (it reads as absent)."""

    def __init__(self, root: Path, foundry: FoundryRuns | None = None) -> None:
        self.root = root
        self.foundry = foundry

    def folder(self, run_id: str) -> Path:
        located = self.foundry.locate(run_id) if self.foundry is not None and is_foundry_id(run_id) else None
        return located if located is not None else self.root / run_id

    def known(self, run_id: str) -> bool:
        """A plain folder name holding a ``meta.json`` or a ``log.jsonl``, or a Foundry run id that locates."""
        if is_foundry_id(run_id):
            return self.foundry is not None and self.foundry.locate(run_id) is not None
        run_dir = self.root / run_id
        return (
            bool(run_id)
            and "/" not in run_id
            and ((run_dir / "meta.json").exists() or (run_dir / "log.jsonl").exists())
        )

    def foundry_run(self, run_id: str) -> FoundryRun | None:
        """What a Foundry run id names (``None`` for the service's own runs): such a run is read-only."""
        return parse_foundry_id(run_id)
