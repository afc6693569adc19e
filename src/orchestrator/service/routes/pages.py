"""The page and its assets: ``/`` (the UI), ``/static/<name>``, ``/favicon.ico`` and ``/healthz``."""

from __future__ import annotations

import re
from importlib import resources

from quart import Blueprint, Response

from orchestrator.service.routes.common import error_response

__all__ = ["pages_blueprint"]

#: A static asset's name: one plain file name (no path, no dot-file, no NUL or odd characters).
_STATIC_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}")
_KINDS = {"js": "text/javascript", "css": "text/css", "html": "text/html", "svg": "image/svg+xml"}


def _static(name: str) -> bytes:
    return resources.files("orchestrator.web").joinpath("static", name).read_bytes()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _trust_notice(lines: list[str]) -> str:
    """The page's banner naming the workspace files ``serve`` ignored (empty when none were)."""
    if not lines:
        return ""
    items = "".join(f"<li>{_escape(line)}</li>" for line in lines)
    return (
        '<div class="banner trust-banner" data-testid="trust-banner" role="status">'
        f"<strong>Untrusted workspace configuration ignored</strong><ul>{items}</ul></div>"
    )


def pages_blueprint(title: str, trust_lines: list[str] | None = None) -> Blueprint:
    """The page (titled ``title``, with a banner for each of ``trust_lines``), its assets and the liveness
    probe."""
    notice = _trust_notice(list(trust_lines or []))
    pages = Blueprint("pages", __name__)

    @pages.get("/")
    async def index() -> Response:
        page = _static("index.html").decode().replace("{{TITLE}}", _escape(title)).replace("{{TRUST}}", notice)
        return Response(page, content_type="text/html; charset=utf-8", headers={"cache-control": "no-store"})

    @pages.get("/healthz")
    async def healthz() -> Response:
        # Liveness for container health checks: public (no token, no body, nothing about the service).
        return Response(b'{"ok":true}', content_type="application/json", headers={"cache-control": "no-store"})

    @pages.get("/favicon.ico")
    async def favicon() -> Response:
        return Response("", status=204)

    @pages.get("/static/<path:name>")
    async def static_asset(name: str) -> Response:
        if not _STATIC_NAME.fullmatch(name):
            return error_response("not_found", 404)
        try:
            data = _static(name)
        except (FileNotFoundError, IsADirectoryError):
            return error_response("not_found", 404)
        kind = _KINDS.get(name.rsplit(".", 1)[-1], "application/octet-stream")
        return Response(data, content_type=kind, headers={"cache-control": "no-store"})

    return pages
