"""glob_files and search_text: matching rules, containment, skips and caps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.tools.support import Layout, make_ctx

from orchestrator.tools.repomap import repo_map
from orchestrator.tools.search import GLOB_CAP, SEARCH_CAP, compile_glob, expand_braces, glob_files, search_text


def _tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


@pytest.mark.parametrize(
    ("pattern", "matching", "not_matching"),
    [
        ("*.py", ["a.py"], ["d/a.py", ".a.py", "a.pyc"]),
        ("**/*.py", ["a.py", "d/e/a.py"], ["d/.h/a.py", ".h/a.py"]),
        ("src/*.{ts,tsx}", ["src/a.ts", "src/b.tsx"], ["src/c/d.ts", "src/a.js"]),
        ("?.md", ["a.md"], ["ab.md", "/.md"]),
        ("[!a]b.txt", ["cb.txt"], ["ab.txt"]),
        ("docs/**", ["docs/x", "docs/x/y.md"], ["docs", "other/x"]),
        ("{a,b{1,2}}/*.c", ["a/x.c", "b1/x.c", "b2/x.c"], ["b/x.c", "b3/x.c"]),
        (".github/**/*.yml", [".github/workflows/ci.yml"], ["github/workflows/ci.yml"]),
        ("**/.eslintrc", [".eslintrc", "pkg/.eslintrc"], []),
    ],
)
def test_glob_semantics(pattern: str, matching: list[str], not_matching: list[str]) -> None:
    regex, _ = compile_glob(pattern)
    assert all(regex.fullmatch(p) for p in matching), [p for p in matching if not regex.fullmatch(p)]
    assert not any(regex.fullmatch(p) for p in not_matching)


def test_brace_expansion() -> None:
    assert expand_braces("a{b,c{d,e}}") == ["ab", "acd", "ace"]
    assert expand_braces("{x}") == ["{x}"] and expand_braces("a{b") == ["a{b"]


async def test_glob_files_lists_sorted_matches_and_never_enters_bookkeeping(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "src/b.py": "",
            "src/a.py": "",
            "src/pkg/c.py": "",
            "src/notes.md": "",
            ".orchestration/runs/r/x.py": "",
            ".git/hooks/h.py": "",
            ".venv/lib/v.py": "",
        },
    )
    result = await glob_files(make_ctx(tmp_path), {"pattern": "**/*.py"})
    assert result.kind == "success"
    assert result.data == {
        "pattern": "**/*.py",
        "matches": ["src/a.py", "src/b.py", "src/pkg/c.py"],
        "count": 3,
        "truncated": False,
    }
    dotted = await glob_files(make_ctx(tmp_path), {"pattern": "**/.*/**/*.py"})
    assert ".orchestration/runs/r/x.py" not in dotted.data["matches"] and ".venv/lib/v.py" in dotted.data["matches"]
    assert not any(m.startswith(".git/") for m in dotted.data["matches"])


async def test_glob_files_refusals(layout: Layout) -> None:
    ctx = layout.ctx()
    assert (await glob_files(ctx, {"pattern": ".orchestration/**"})).kind == "permission_denied"
    assert (await glob_files(ctx, {"pattern": "./.orchestration/*"})).kind == "permission_denied"
    assert (await glob_files(ctx, {"pattern": "../outside/*"})).kind == "invalid_arguments"
    assert (await glob_files(ctx, {"pattern": "/etc/*"})).kind == "invalid_arguments"
    assert (await glob_files(ctx, {"pattern": "{a,../b}/*"})).kind == "invalid_arguments"
    assert (await glob_files(ctx, {"pattern": ""})).kind == "invalid_arguments"


async def test_glob_files_does_not_follow_directory_symlinks_out(layout: Layout) -> None:
    result = await glob_files(layout.ctx(), {"pattern": "**/*.txt"})
    assert result.kind == "success"
    assert "sub/inner.txt" in result.data["matches"] and "link_in" not in result.data["matches"]
    assert not any("secret" in m for m in result.data["matches"])
    through_link = await glob_files(layout.ctx(), {"pattern": "link_out_dir/*.txt"})
    assert through_link.data["matches"] == []


async def test_glob_files_caps_the_list(tmp_path: Path) -> None:
    _tree(tmp_path, {f"many/f{i:04}.txt": "" for i in range(GLOB_CAP + 20)})
    result = await glob_files(make_ctx(tmp_path), {"pattern": "many/*.txt"})
    assert len(result.data["matches"]) == GLOB_CAP and result.data["truncated"] is True
    assert result.data["matches"][0] == "many/f0000.txt" and result.data["count"] == GLOB_CAP + 20


async def test_search_text_reports_path_line_and_text(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "src/app.ts": "import x\nexport function handleRequest() {}\n",
            "src/util.py": "def handle_request():\n    pass\n",
            "bin/blob": b"handleRequest\x00\x01",
            ".git/config": "handleRequest",
            ".orchestration/runs/r/log.jsonl": "handleRequest",
            "node_modules/lib/index.js": "handleRequest",
        },
    )
    result = await search_text(make_ctx(tmp_path), {"pattern": r"handle_?[Rr]equest"})
    assert result.kind == "success"
    assert result.data["matches"] == [
        {"path": "src/app.ts", "line": 2, "text": "export function handleRequest() {}"},
        {"path": "src/util.py", "line": 1, "text": "def handle_request():"},
    ]
    assert result.data["truncated"] is False


async def test_search_text_narrowed_to_paths(tmp_path: Path) -> None:
    _tree(tmp_path, {"a/x.txt": "needle\n", "b/y.txt": "needle\n", "node_modules/n.js": "needle\n"})
    ctx = make_ctx(tmp_path)
    narrowed = await search_text(ctx, {"pattern": "needle", "paths": ["b", "a/x.txt"]})
    assert [m["path"] for m in narrowed.data["matches"]] == ["b/y.txt", "a/x.txt"]
    explicit = await search_text(ctx, {"pattern": "needle", "paths": ["node_modules"]})
    assert [m["path"] for m in explicit.data["matches"]] == ["node_modules/n.js"]


async def test_search_text_failures(layout: Layout) -> None:
    ctx = layout.ctx()
    assert (await search_text(ctx, {"pattern": "("})).kind == "invalid_arguments"
    assert (await search_text(ctx, {"pattern": "x", "paths": [".orchestration"]})).kind == "permission_denied"
    assert (await search_text(ctx, {"pattern": "x", "paths": ["link_orch"]})).kind == "permission_denied"
    assert (await search_text(ctx, {"pattern": "x", "paths": ["../outside"]})).kind == "invalid_arguments"
    assert (await search_text(ctx, {"pattern": "x", "paths": ["link_out_file"]})).kind == "invalid_arguments"
    assert (await search_text(ctx, {"pattern": "x", "paths": ["missing"]})).kind == "not_found"


async def test_search_text_never_reads_through_links_that_leave(layout: Layout) -> None:
    result = await search_text(layout.ctx(), {"pattern": "secret|the plan|inner"})
    assert [m["path"] for m in result.data["matches"]] == ["link_in", "sub/inner.txt"]


async def test_search_text_caps_matches(tmp_path: Path) -> None:
    _tree(tmp_path, {"big.txt": "hit " + "x" * 500 + "\n" * 1 + "hit\n" * (SEARCH_CAP + 50)})
    result = await search_text(make_ctx(tmp_path), {"pattern": "^hit"})
    assert len(result.data["matches"]) == SEARCH_CAP and result.data["truncated"] is True
    assert result.data["matches"][0]["text"].endswith("[…]")


async def test_search_text_and_repo_map_skip_a_hard_link_to_an_outside_file(layout: Layout) -> None:
    os.link(layout.outside / "secret.txt", layout.ws / "linked.txt")
    os.link(layout.outside / "secret.txt", layout.ws / "linked.py")
    ctx = layout.ctx()
    walked = await search_text(ctx, {"pattern": "secret"})
    assert walked.kind == "success" and walked.data["matches"] == []
    named = await search_text(ctx, {"pattern": "secret", "paths": ["linked.txt"]})
    assert named.kind == "permission_denied" and "hard links" in str(named.message)
    (layout.outside / "secret.txt").write_text("def top_secret(): pass\n")  # every name shows the new bytes
    mapped = await repo_map(ctx, {"path": "linked.py"})
    assert mapped.kind == "success" and "top_secret" not in str(mapped.data)
