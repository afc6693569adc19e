"""Adaptive Orchestrator: a trio runtime that runs a small local model against a Guild of roles."""

__version__ = "0.1.0"
__all__ = ["__version__"]
