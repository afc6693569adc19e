"""The bootstrap page served while the service cannot start: an invalid configuration (fix it, restart),
or a valid one whose model server does not answer yet (the page waits and reloads by itself)."""

from __future__ import annotations

import html

import msgspec
from quart import Response, request
from quart_trio import QuartTrio

from orchestrator.config.redaction import without_userinfo
from orchestrator.schema import Base

__all__ = ["WAIT_RELOAD_SECONDS", "Waiting", "api_base_shown", "create_error_app", "render_error_page"]


#: How often the waiting page reloads itself (the service replaces it on the same port once the model answers).
WAIT_RELOAD_SECONDS = 5


class Waiting(Base):
    """Nothing is invalid: the service waits for the model server at ``api_base`` (``loading``: it answers,
    but is still loading its model)."""

    api_base: str
    loading: bool = False


def api_base_shown(api_base: str) -> str:
    """How the page shows ``model.apiBase`` (every place it names it goes through here): without its
    userinfo (``http://user:<password>@host/v1`` shows as ``http://host/v1``), a credential whether or not it
    was recognised as one. The probe's problems, which the JSON answer lists, are cleaned the same way."""
    return without_userinfo(api_base)


def _waiting_lead(waiting: Waiting) -> str:
    where = f"<code>{html.escape(api_base_shown(waiting.api_base))}</code>"
    if waiting.loading:
        cause = f"The model server at {where} is still loading its model."
    else:
        cause = (
            f"No model server answers at {where}. Start one (see <code>docs/models.md</code>), set "
            "<code>ORCHESTRATOR_API_BASE</code> to the one you run (then restart this service), or try "
            "<code>orchestrator demo</code>, which brings its own simulated model."
        )
    return (
        f"<p>{cause}</p>\n    <p>The service starts by itself once the model server answers; this page "
        f"reloads every {WAIT_RELOAD_SECONDS} s until then. Details:</p>"
    )


def render_error_page(
    problems: list[str], title: str, *, sources: list[str] | None = None, waiting: Waiting | None = None
) -> str:
    """A self-contained HTML page (no external assets, no script) listing every problem.

    ``sources`` are the lines saying which Guild and deployment file are in use (and where each came
    from); without them the page names the places they are looked for. ``waiting``: nothing is invalid,
    the service waits for its model server; the page says so and reloads itself every
    :data:`WAIT_RELOAD_SECONDS` (a ``<meta http-equiv="refresh">``), so it becomes the service by itself.
    """
    items = "\n".join(f"      <li><code>{html.escape(p)}</code></li>" for p in problems)
    if sources:
        where = (
            "<p>In use:</p>\n    <ul>\n"
            + "\n".join(f"      <li><code>{html.escape(line)}</code></li>" for line in sources)
            + "\n    </ul>"
        )
    else:
        where = (
            "<p>The deployment file is <code>ORCHESTRATOR_DEPLOYMENT_FILE</code>, else the workspace's "
            "<code>deployment/deployment.json</code>, else the packaged one; the Guild is "
            "<code>ORCHESTRATOR_GUILD_DIR</code>, else the workspace's <code>guild/</code>, else the packaged one.</p>"
        )
    if waiting is not None:
        kind, heading = "waiting for the model server", "The orchestrator is waiting for its model server"
        lead = _waiting_lead(waiting)
        refresh = f'\n    <meta http-equiv="refresh" content="{WAIT_RELOAD_SECONDS}">'
        colour = "#8a5a00"
    else:
        kind, heading = "configuration error", "The orchestrator could not start: its configuration is invalid"
        lead = "<p>Fix the following, then restart the service:</p>"
        refresh = ""
        colour = "#b3261e"
    return f"""<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">{refresh}
    <title>{html.escape(title)} — {kind}</title>
    <style>
      body {{ font: 16px/1.5 system-ui, sans-serif; max-width: 52rem; margin: 3rem auto; padding: 0 1rem;
             color: #1d1d1f; background: #fafafa; }}
      h1 {{ color: {colour}; font-size: 1.4rem; }}
      li {{ margin: .5rem 0; }}
      code {{ white-space: pre-wrap; word-break: break-word; background: #f0f0f0; padding: .1rem .3rem;
              border-radius: 4px; }}
    </style>
  </head>
  <body>
    <h1>{heading}</h1>
    {lead}
    <ul>
{items}
    </ul>
    {where}
    <p>Secrets are never shown here.</p>
  </body>
</html>
"""


def create_error_app(
    problems: list[str], title: str, *, sources: list[str] | None = None, waiting: Waiting | None = None
) -> QuartTrio:
    """Every GET shows the page (HTTP 503); API paths answer JSON naming the problems; ``/healthz`` answers
    503 ``{"ok": false}`` so a container health check reports the broken configuration. The ``error`` code
    is ``invalid_configuration``, or ``model_not_ready`` while ``waiting`` for the model server."""
    app = QuartTrio(__name__)
    page = render_error_page(problems, title, sources=sources, waiting=waiting)
    code = "model_not_ready" if waiting is not None else "invalid_configuration"

    @app.route("/", defaults={"path": ""}, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    @app.route("/<path:path>", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    async def everything(path: str) -> Response:
        if path == "healthz":
            return Response(_json({"ok": False, "error": code}), status=503, content_type="application/json")
        if path.startswith("api/"):
            body = {"ok": False, "error": code, "problems": problems}
            return Response(_json(body), status=503, content_type="application/json")
        if request.method != "GET":
            return Response("", status=405)
        return Response(page, status=503, content_type="text/html; charset=utf-8")

    return app


def _json(value: object) -> bytes:
    return msgspec.json.encode(value)
