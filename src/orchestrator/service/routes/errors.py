"""The answers when no route answers: an unknown ``/api/...`` path, 404/405, a refused request, a bug.

Every one is the JSON error body; a 5xx never carries the exception (it goes to stderr).
"""

from __future__ import annotations

import sys
import traceback

from quart import Blueprint, Response, request
from werkzeug.exceptions import HTTPException

from orchestrator.service.routes.common import error_response

__all__ = ["errors_blueprint"]

#: The error code of a refused request by status (anything else is ``invalid_request``).
_CODES = {413: "too_large", 415: "unsupported_media_type"}


def errors_blueprint() -> Blueprint:
    errors = Blueprint("errors", __name__)

    @errors.route("/api/<path:rest>", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    async def unknown_api(rest: str) -> Response:
        return error_response("not_found", 404)

    @errors.app_errorhandler(404)
    async def not_found(_: Exception) -> Response:
        return error_response("not_found", 404)

    @errors.app_errorhandler(405)
    async def not_allowed(_: Exception) -> Response:
        return error_response("not_found", 404)

    @errors.app_errorhandler(HTTPException)
    async def http_error(exc: HTTPException) -> Response:
        status = exc.code if isinstance(exc.code, int) and 400 <= exc.code < 500 else 400
        return error_response(_CODES.get(status, "invalid_request"), status)

    @errors.app_errorhandler(Exception)
    async def internal_error(exc: Exception) -> Response:
        if isinstance(exc, HTTPException) and exc.code is not None and exc.code < 500:
            return await http_error(exc)
        where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        at = f" at {where[0].filename}:{where[0].lineno}" if where else ""
        print(
            f"orchestrator: internal error on {request.method} {request.path!r}: {type(exc).__name__}{at}",
            file=sys.stderr,
        )
        return error_response("internal_error", 500)

    return errors
