"""The HTTP API, the live stream and the static UI: a Quart-Trio app over one ``Service``.

``create_app`` only assembles: one blueprint per resource (``service/routes/``: pages, config, runs,
rundetail, search, toolresults, contexttrack, replay, questions, queue, foundry, stream, errors), then the
perimeter in front of all of them. Every derivation lives in pure modules (``views``, ``flow``,
``queue``); handlers only parse, call and encode.
"""

from __future__ import annotations

from quart_trio import QuartTrio

from orchestrator.engine.runfolder import runs_root
from orchestrator.service.core import Service
from orchestrator.service.foundryruns import FoundryRuns
from orchestrator.service.perimeter import Perimeter
from orchestrator.service.perimeter_rules import Policy
from orchestrator.service.routes.common import RunFolders
from orchestrator.service.routes.config import config_blueprint
from orchestrator.service.routes.contexttrack import context_blueprint
from orchestrator.service.routes.errors import errors_blueprint
from orchestrator.service.routes.foundry import foundry_blueprint
from orchestrator.service.routes.pages import pages_blueprint
from orchestrator.service.routes.questions import questions_blueprint
from orchestrator.service.routes.queue import queue_blueprint
from orchestrator.service.routes.replay import replay_blueprint
from orchestrator.service.routes.rundetail import rundetail_blueprint
from orchestrator.service.routes.runs import runs_blueprint
from orchestrator.service.routes.search import search_blueprint
from orchestrator.service.routes.stream import stream_blueprint
from orchestrator.service.routes.toolresults import toolresults_blueprint
from orchestrator.service.runindex import RunIndexes
from orchestrator.service.stream import StreamLimits

__all__ = ["create_app"]


def create_app(service: Service, policy: Policy | None = None, limits: StreamLimits | None = None) -> QuartTrio:
    """Build the app for ``service`` (no module-level app, no globals). ``policy`` puts the perimeter
    (Host, Origin, token, JSON-only, security headers) in front of every route; ``None`` leaves it off
    (the benchmark's baseline and a few in-process tests)."""
    app = QuartTrio(__name__, static_folder=None)
    root = runs_root(service.workspace)
    folders = RunFolders(root, FoundryRuns(service.workspace))
    indexes = RunIndexes(folders.folder)
    app.register_blueprint(pages_blueprint(service.title, service.trust.notes() if service.trust else None))
    app.register_blueprint(config_blueprint(service))
    app.register_blueprint(runs_blueprint(service, indexes, folders))
    app.register_blueprint(rundetail_blueprint(service, indexes, folders))
    app.register_blueprint(search_blueprint(indexes, folders))
    app.register_blueprint(toolresults_blueprint(indexes, folders))
    app.register_blueprint(context_blueprint(service, indexes, folders))
    app.register_blueprint(replay_blueprint(indexes, folders))
    app.register_blueprint(questions_blueprint(service))
    app.register_blueprint(queue_blueprint(service))
    app.register_blueprint(foundry_blueprint(service))
    app.register_blueprint(stream_blueprint(service, limits or StreamLimits()))
    app.register_blueprint(errors_blueprint())
    if policy is not None:
        app.asgi_app = Perimeter(app.asgi_app, policy)  # type: ignore[method-assign]
    return app
