"""The fast YAML reader agrees with PyYAML's CSafeLoader (values, types and failures)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.helpers import PUBLIC_CORPUS as REAL_CORPUS
from tests.helpers import needs_public_corpus

from orchestrator.workflow.corpus.markdown import _simple_mapping, split_frontmatter
from orchestrator.workflow.corpus.yamlload import load_yaml


def _both(text: str) -> tuple[Any, Any]:
    def run(loader: Any) -> Any:
        try:
            return ("ok", loader(text))
        except yaml.YAMLError as exc:
            return ("error", type(exc).__name__)

    return run(load_yaml), run(_c_safe_load)


def _c_safe_load(text: str) -> Any:
    return yaml.load(text, Loader=yaml.CSafeLoader)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: -2\nc: +3\nd: 0\ne: 010\nf: 0x1F\ng: 1_000\nh: 1:30\n",
        "a: 1.5\nb: .5\nc: +.5\nd: 1.5e+3\ne: 1e3\nf: .inf\ng: -.Inf\nh: .nan\ni: 1.\n",
        "a: yes\nb: No\nc: on\nd: OFF\ne: True\nf: ~\ng: null\nh:\ni: ''\nj: 'yes'\n",
        "d: 2024-01-31\nt: 2024-01-31 10:00:00\n",
        "a: &x [1, 2]\nb: *x\n",
        "base: &b {k: 1}\nmerged:\n  <<: *b\n  j: 2\n",
        "a: !!str 5\nb: !!int '7'\n",
        "? [1, 2]\n: x\n",
        "- a\n- - b\n  - {c: d}\n",
        "a: |\n  line\n  line2\nb: >\n  folded\n  text\n",
        "dup: 1\ndup: 2\n",
        "",
        "# only a comment\n",
        "---\na: 1\n...\n",
        "---\na: 1\n---\nb: 2\n",
        "a: [1, 2\n",
        "a: b: c\n",
        "\t- tab\n",
        "=: value\n",
        "key: =\n",
        "1: one\n2.5: two\nnull: three\ntrue: four\n",
    ],
)
def test_matches_safe_load(text: str) -> None:
    fast, reference = _both(text)
    assert fast == reference
    if fast[0] == "ok":
        assert type(fast[1]) is type(reference[1])


_scalars = st.one_of(
    st.sampled_from(
        [
            "yes",
            "no",
            "~",
            "null",
            "1",
            "-0",
            "0.5",
            ".5",
            "1e3",
            "1.0e+3",
            "0x10",
            "010",
            "1_0",
            "2001-01-01",
            "inf",
            ".inf",
            "a: b",
            "'q'",
            '"dq"',
            "#c",
            "- x",
            "[1]",
            "{a: 1}",
            "*a",
            "&a x",
            "!!str 1",
            "<<",
            "=",
            "",
            "  ",
            "true",
            "True",
            "TRUE",
            "tRUE",
        ]
    ),
    st.text(alphabet="abc01.:-#'\"[]{}&*! \n", max_size=8),
)


@settings(max_examples=300)
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "- ", "  c", "1"]), _scalars), max_size=6))
def test_random_documents_match_safe_load(lines: list[tuple[str, str]]) -> None:
    text = "\n".join(f"{key}: {value}" if not key.startswith("-") else f"{key}{value}" for key, value in lines)
    fast, reference = _both(text)
    assert fast == reference or (fast[0] == reference[0] == "ok" and repr(fast[1]) == repr(reference[1]))


@needs_public_corpus
def test_real_corpus_yaml_and_frontmatter_match_safe_load() -> None:
    for path in sorted(REAL_CORPUS.rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        assert load_yaml(text) == _c_safe_load(text), path
    checked = 0
    for path in sorted(REAL_CORPUS.rglob("*.md")):
        raw = split_frontmatter(path.read_text(encoding="utf-8"))[0]
        simple = _simple_mapping(raw) if raw is not None else None
        if simple is not None:
            checked += 1
            assert simple == yaml.safe_load(raw), path
    assert checked > 500


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(st.sampled_from(["name", "version", "metadata", "  version", "  order", "#x", "a-b"]), _scalars),
        max_size=5,
    )
)
def test_simple_frontmatter_agrees_or_defers(lines: list[tuple[str, str]]) -> None:
    raw = "\n".join(f"{key}: {value}" for key, value in lines)
    simple = _simple_mapping(raw)
    if simple is None:
        return
    assert simple == yaml.safe_load(raw)
