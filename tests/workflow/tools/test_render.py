"""``tools/render.py``: YAML keeps order, never folds and uses literal blocks; JSON is indented in key order."""

from __future__ import annotations

import yaml

from orchestrator.workflow.tools.render import to_json, to_yaml


def test_yaml_keeps_order_never_folds_and_uses_literal_blocks() -> None:
    long_line = "word " * 60
    text = to_yaml({"b": long_line.strip(), "a": "line one\nline two\n", "c": [1, {"d": None}]})
    assert text.splitlines()[0].startswith("b: word word") and len(text.splitlines()[0]) > 250
    assert "a: |\n  line one\n  line two" in text and not text.endswith("\n")
    assert yaml.safe_load(text)["a"] == "line one\nline two\n"
    assert to_json({"z": 1, "a": [1]}) == '{\n  "z": 1,\n  "a": [\n    1\n  ]\n}'
