"""Our gen_ai.* names are the semantic conventions' own (the package the SDK installs)."""

from __future__ import annotations

from opentelemetry.semconv._incubating.attributes import error_attributes, gen_ai_attributes, mcp_attributes
from opentelemetry.semconv.version import __version__

from orchestrator.observability import attributes as a


def test_gen_ai_names_match_the_semantic_conventions_package() -> None:
    assert f"opentelemetry-semantic-conventions {__version__}" == a.SEMCONV_PACKAGE
    ours = {name: value for name, value in vars(a).items() if isinstance(value, str) and value.startswith("gen_ai.")}
    for name, value in ours.items():
        assert getattr(gen_ai_attributes, f"GEN_AI_{name}") == value, name
    assert error_attributes.ERROR_TYPE == a.ERROR_TYPE
    assert mcp_attributes.MCP_METHOD_NAME == a.MCP_METHOD_NAME


def test_everything_else_is_namespaced() -> None:
    names = [
        v
        for k, v in vars(a).items()
        if k.isupper() and isinstance(v, str) and "." in v and k not in ("SEMCONV_PACKAGE",) and not k.startswith("OP")
    ]
    assert all(n.startswith(("gen_ai.", "orchestrator.", "error.", "mcp.")) for n in names)
