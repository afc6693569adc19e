"""The service's HTTP API as the runs face sees it: authenticated requests, and clear failures.

Every request carries ``Authorization: Bearer <token>`` when a token is known: ``ORCHESTRATOR_TOKEN``,
else ``<workspace>/.orchestration/token`` read with the service's own rules (``service/token.py``),
afresh for each request so a service started later is picked up. Anything but a 2xx answer becomes
``ServiceUnavailable`` with a message saying what happened and where — an unreachable service is
reported as such, never papered over.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from orchestrator.errors import ConfigError
from orchestrator.service.token import TOKEN_ENV, read_token_file, token_path

__all__ = ["DEFAULT_SERVER", "ServiceClient", "ServiceUnavailable", "read_token"]

DEFAULT_SERVER = "http://127.0.0.1:8765"
_TIMEOUT = httpx.Timeout(30.0, connect=5.0)


class ServiceUnavailable(Exception):
    """The service could not answer the request as asked; ``message`` says why, for the caller."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


def read_token(env: Mapping[str, str], workspace: Path | None) -> str | None:
    """``ORCHESTRATOR_TOKEN`` (non-blank), else the workspace's token file as the service keeps it.

    ``None`` when neither is there. A token file the service itself would refuse (unreadable, not a
    token, readable by other users) raises ``ServiceUnavailable`` with the service's own message.
    """
    value = env.get(TOKEN_ENV, "").strip()
    if value:
        return value
    if workspace is None:
        return None
    try:
        return read_token_file(token_path(workspace))
    except ConfigError as exc:
        raise ServiceUnavailable(str(exc)) from None


class ServiceClient:
    """Requests to one ``orchestrator serve`` at ``base_url``."""

    def __init__(self, base_url: str, env: Mapping[str, str], workspace: Path | None) -> None:
        self.base_url = base_url.rstrip("/")
        self._env = env
        self._workspace = workspace

    async def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """The decoded JSON answer of a 2xx response; raises ``ServiceUnavailable`` otherwise."""
        headers = {"accept": "application/json"}
        token = read_token(self._env, self._workspace)
        if token:
            headers["authorization"] = f"Bearer {token}"
        try:
            async with httpx.AsyncClient(base_url=self.base_url, timeout=_TIMEOUT) as http:
                response = await http.request(method, path, json=body, headers=headers)
        except httpx.HTTPError as exc:
            reason = str(exc).strip() or type(exc).__name__
            raise ServiceUnavailable(
                f"no orchestrator service is reachable at {self.base_url} ({reason}); start one with "
                "`orchestrator serve` (or pass --server URL) and call again"
            ) from None
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if response.is_success:
            return answer
        code = answer.get("error") if isinstance(answer, dict) else None
        detail = answer.get("message") if isinstance(answer, dict) else None
        raise ServiceUnavailable(
            _failure(self.base_url, method, path, response.status_code, code, detail),
            status=response.status_code,
            code=code if isinstance(code, str) else None,
        )


def _failure(base: str, method: str, path: str, status: int, code: object, detail: object = None) -> str:
    """What went wrong, for the agent: the service's own ``message`` (e.g. which run, in which status)
    follows the status and code when the answer carries one."""
    where = f"{method} {base}{path}"
    if status == 401:
        return (
            f"the orchestrator service at {base} refused the request (401): set {TOKEN_ENV} or start the "
            "face with --workspace pointing at the served project (its .orchestration/token holds the token)"
        )
    if status == 403:
        return f"the orchestrator service at {base} refused the request (403 {code or 'forbidden'})"
    said = f": {detail}" if isinstance(detail, str) and detail else ""
    return f"{where} answered {status}" + (f" ({code})" if code else "") + said
