"""The bootstrap error page: invalid startup configuration still binds the port and says what to fix."""

from __future__ import annotations

import html

from quart import Response, request
from quart_trio import QuartTrio

__all__ = ["create_error_app", "render_error_page"]


def render_error_page(problems: list[str], title: str) -> str:
    """A self-contained HTML page (no external assets) listing every configuration problem."""
    items = "\n".join(f"      <li><code>{html.escape(p)}</code></li>" for p in problems)
    return f"""<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>{html.escape(title)} — configuration error</title>
    <style>
      body {{ font: 16px/1.5 system-ui, sans-serif; max-width: 52rem; margin: 3rem auto; padding: 0 1rem;
             color: #1d1d1f; background: #fafafa; }}
      h1 {{ color: #b3261e; font-size: 1.4rem; }}
      li {{ margin: .5rem 0; }}
      code {{ white-space: pre-wrap; word-break: break-word; background: #f0f0f0; padding: .1rem .3rem;
              border-radius: 4px; }}
    </style>
  </head>
  <body>
    <h1>The orchestrator could not start: its configuration is invalid</h1>
    <p>Fix the following, then restart the service:</p>
    <ul>
{items}
    </ul>
    <p>The deployment file is <code>deployment/deployment.json</code> (or <code>ORCHESTRATOR_DEPLOYMENT_FILE</code>);
       the Guild is <code>guild/</code> (or <code>ORCHESTRATOR_GUILD_DIR</code>). Secrets are never shown here.</p>
  </body>
</html>
"""


def create_error_app(problems: list[str], title: str) -> QuartTrio:
    """Every GET shows the page (HTTP 503); API paths answer JSON naming the problems; ``/healthz`` answers
    503 ``{"ok": false}`` so a container health check reports the broken configuration."""
    app = QuartTrio(__name__)
    page = render_error_page(problems, title)

    @app.route("/", defaults={"path": ""}, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    @app.route("/<path:path>", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    async def everything(path: str) -> Response:
        if path == "healthz":
            return Response(
                _json({"ok": False, "error": "invalid_configuration"}), status=503, content_type="application/json"
            )
        if path.startswith("api/"):
            body = {"ok": False, "error": "invalid_configuration", "problems": problems}
            return Response(_json(body), status=503, content_type="application/json")
        if request.method != "GET":
            return Response("", status=405)
        return Response(page, status=503, content_type="text/html; charset=utf-8")

    return app


def _json(value: object) -> bytes:
    import msgspec

    return msgspec.json.encode(value)
