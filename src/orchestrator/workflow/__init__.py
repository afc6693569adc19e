"""The workflow server: structured workflows served to agents over MCP (``orchestrator mcp``).

Subpackages: ``corpus`` (the immutable, loaded workflow definitions and pure derivations over them),
``session`` (sealed session files, indexes, trace tokens) and ``tools`` (one handler per MCP tool);
``server`` wires them to the official ``mcp`` SDK on the trio backend over stdio.
"""
