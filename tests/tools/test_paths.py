"""Containment: a table of hostile paths against read_file, write_file and list_directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.tools.support import Layout

from orchestrator.tools import ToolError
from orchestrator.tools.files import list_directory, read_file, write_file
from orchestrator.tools.paths import ESCAPE_MESSAGE, resolve_path

ESCAPE = "invalid_arguments"
DENIED = "permission_denied"

#: (id, path, kind). ``{root}`` / ``{ws}`` are filled with the absolute folders.
HOSTILE: list[tuple[str, str, str]] = [
    ("dotdot-sibling", "../outside/secret.txt", ESCAPE),
    ("dotdot-etc", "../../etc/passwd", ESCAPE),
    ("dotdot-through-sub", "sub/../../outside/secret.txt", ESCAPE),
    ("dotdot-long-chain", "sub/../../../../../../../../etc/passwd", ESCAPE),
    ("dotdot-with-dots", "sub/./../.././outside", ESCAPE),
    ("dotdot-only", "..", ESCAPE),
    ("absolute-etc", "/etc/passwd", ESCAPE),
    ("absolute-outside", "{root}/outside/secret.txt", ESCAPE),
    ("absolute-outside-via-ws", "{ws}/../outside/secret.txt", ESCAPE),
    ("symlinked-file", "link_out_file", ESCAPE),
    ("symlinked-parent-existing", "link_out_dir/secret.txt", ESCAPE),
    ("symlinked-parent-new-file", "link_out_dir/new.txt", ESCAPE),
    ("symlinked-parent-new-deep", "link_out_dir/deeper/still/new.txt", ESCAPE),
    ("dangling-link-outside", "dangling_out", ESCAPE),
    ("orchestration-after-escape", ".orchestration/../../outside/secret.txt", ESCAPE),
    ("orchestration-plain", ".orchestration", DENIED),
    ("orchestration-slash", ".orchestration/", DENIED),
    ("orchestration-file", ".orchestration/runs/run-1/plan.md", DENIED),
    ("orchestration-new-file", ".orchestration/new.txt", DENIED),
    ("orchestration-dot-slash", "./.orchestration/x", DENIED),
    ("orchestration-via-dotdot", "sub/../.orchestration/x", DENIED),
    ("orchestration-dot-dotdot", "./sub/../.orchestration", DENIED),
    ("orchestration-absolute", "{ws}/.orchestration/runs", DENIED),
    ("orchestration-symlink", "link_orch", DENIED),
    ("orchestration-symlink-child", "link_orch/runs/run-1/plan.md", DENIED),
    ("orchestration-deep-symlink", "sub/link_orch_deep/x", DENIED),
    ("empty", "", ESCAPE),
    ("nul-byte", "ok.txt\x00.png", ESCAPE),
]
TOOLS = {"read_file": read_file, "write_file": write_file, "list_directory": list_directory}


def _fill(path: str, layout: Layout) -> str:
    return path.format(root=layout.root, ws=layout.ws)


@pytest.mark.parametrize("tool", sorted(TOOLS))
@pytest.mark.parametrize(("path", "kind"), [(p, k) for _, p, k in HOSTILE], ids=[i for i, _, _ in HOSTILE])
async def test_hostile_path_is_refused_and_nothing_changes(layout: Layout, tool: str, path: str, kind: str) -> None:
    before = layout.snapshot()
    arguments = {"path": _fill(path, layout)}
    if tool == "write_file":
        arguments["content"] = "pwned"
    result = await TOOLS[tool](layout.ctx(), arguments)
    if tool == "list_directory" and path == "":
        kind = "success"  # list_directory's path is optional: empty means the root
    assert result.kind == kind, result
    if kind == DENIED:
        assert ".orchestration" in str(result.message) and "read_plan" in str(result.message)
    elif path and "\x00" not in path:
        assert result.message == ESCAPE_MESSAGE
    assert layout.snapshot() == before
    assert not (layout.outside / "new.txt").exists() and not (layout.outside / "not-yet.txt").exists()
    assert "top secret" not in repr(result)


@pytest.mark.parametrize(
    ("path", "rel"),
    [
        ("ok.txt", "ok.txt"),
        ("./sub/../ok.txt", "ok.txt"),
        ("{ws}/sub/inner.txt", "sub/inner.txt"),
        ("link_in", "sub/inner.txt"),
        ("sub/new/deeper.txt", "sub/new/deeper.txt"),
        (".", "."),
        ("sub/.orchestration", "sub/.orchestration"),  # only the top-level folder is bookkeeping
        (".orchestration-notes.md", ".orchestration-notes.md"),
    ],
)
def test_contained_paths_resolve_to_their_real_location(layout: Layout, path: str, rel: str) -> None:
    resolved = resolve_path(layout.ws, _fill(path, layout))
    assert resolved.rel == rel
    assert resolved.real == Path(os.path.realpath(layout.ws)) / rel if rel != "." else Path(os.path.realpath(layout.ws))


def test_a_symlinked_workspace_root_is_canonicalized(layout: Layout) -> None:
    alias = layout.root / "alias"
    alias.symlink_to(layout.ws)
    assert resolve_path(alias, "ok.txt").rel == "ok.txt"
    assert resolve_path(alias, str(layout.ws / "ok.txt")).rel == "ok.txt"
    with pytest.raises(ToolError) as refused:
        resolve_path(alias, ".orchestration/x")
    assert refused.value.kind == DENIED


async def test_reading_through_an_inside_symlink_works(layout: Layout) -> None:
    result = await read_file(layout.ctx(), {"path": "link_in"})
    assert result.kind == "success" and result.data["content"] == "inner\n" and result.data["path"] == "sub/inner.txt"
