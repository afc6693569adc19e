"""The simulated model: a scripted, wire-faithful OpenAI Responses-API server for tests and demos.

See ``docs/sim-model.md`` for the script format and the endpoints.
"""

from orchestrator.sim.script import ScriptError, SimScript, load_script, parse_script
from orchestrator.sim.server import create_sim_app, serve_sim

__all__ = ["ScriptError", "SimScript", "create_sim_app", "load_script", "parse_script", "serve_sim"]
