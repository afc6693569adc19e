"""read_file, read_file_partial, write_file and list_directory: success shapes and failure kinds."""

from __future__ import annotations

import os
from pathlib import Path

import trio
from tests.slowness import budget
from tests.tools.support import Layout, make_ctx

from orchestrator.tools.files import (
    LIST_CAP,
    PARTIAL_LINE_CAP,
    READ_CAP,
    list_directory,
    read_file,
    read_file_partial,
    write_file,
)


async def test_read_file_returns_the_whole_text(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    result = await read_file(make_ctx(tmp_path), {"path": "a.txt"})
    assert result.kind == "success"
    assert result.data == {"path": "a.txt", "content": "one\ntwo\n", "size": 8, "truncated": False}


async def test_read_file_caps_a_huge_file_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * (READ_CAP + 5000))
    result = await read_file(make_ctx(tmp_path), {"path": "big.txt"})
    assert result.kind == "success"
    assert result.data["truncated"] is True and len(result.data["content"]) == READ_CAP
    assert result.data["size"] == READ_CAP + 5000 and "read_file_partial" in result.data["note"]


async def test_read_file_cut_inside_a_multibyte_character_still_decodes(tmp_path: Path) -> None:
    (tmp_path / "accents.txt").write_text("é" * READ_CAP)  # 2 bytes each: the cap falls mid-way
    result = await read_file(make_ctx(tmp_path), {"path": "accents.txt"})
    assert result.kind == "success" and result.data["truncated"] is True
    assert set(result.data["content"]) == {"é"}


async def test_read_file_refuses_binary_and_undecodable_files(tmp_path: Path) -> None:
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (tmp_path / "latin1.txt").write_bytes("café crème".encode("latin-1"))
    binary = await read_file(make_ctx(tmp_path), {"path": "img.png"})
    assert binary.kind == "invalid_arguments" and "binary file" in str(binary.message)
    latin = await read_file(make_ctx(tmp_path), {"path": "latin1.txt"})
    assert latin.kind == "invalid_arguments" and "not UTF-8" in str(latin.message)


async def test_read_file_failure_kinds(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    missing = await read_file(make_ctx(tmp_path), {"path": "nope.txt"})
    assert missing.kind == "not_found" and "nope.txt" in str(missing.message)
    directory = await read_file(make_ctx(tmp_path), {"path": "d"})
    assert directory.kind == "invalid_arguments" and "list_directory" in str(directory.message)
    no_path = await read_file(make_ctx(tmp_path), {})
    assert no_path.kind == "invalid_arguments"


async def test_read_file_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "pipe")
    result = await read_file(make_ctx(tmp_path), {"path": "pipe"})
    assert result.kind == "invalid_arguments" and "regular file" in str(result.message)


async def test_read_file_partial_returns_a_window_of_lines(tmp_path: Path) -> None:
    (tmp_path / "ten.txt").write_text("".join(f"line {i}\n" for i in range(10)))
    result = await read_file_partial(make_ctx(tmp_path), {"path": "ten.txt", "offset": 2, "limit": 3})
    assert result.kind == "success"
    assert result.data == {
        "path": "ten.txt",
        "lines": ["line 2", "line 3", "line 4"],
        "offset": 2,
        "count": 3,
        "total": 10,
    }
    tail = await read_file_partial(make_ctx(tmp_path), {"path": "ten.txt", "offset": 8, "limit": 50})
    assert tail.data["lines"] == ["line 8", "line 9"] and tail.data["count"] == 2
    past = await read_file_partial(make_ctx(tmp_path), {"path": "ten.txt", "offset": 99, "limit": 5})
    assert past.kind == "success" and past.data["lines"] == [] and past.data["total"] == 10


async def test_read_file_partial_clamps_the_limit_and_handles_crlf(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("x\r\n" * (PARTIAL_LINE_CAP + 10))
    result = await read_file_partial(make_ctx(tmp_path), {"path": "many.txt", "offset": 0, "limit": 10**6})
    assert result.data["count"] == PARTIAL_LINE_CAP and result.data["lines"][0] == "x"
    assert result.data["total"] == PARTIAL_LINE_CAP + 10


async def test_read_file_partial_failures(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.bin").write_bytes(b"\x00\x01")
    ctx = make_ctx(tmp_path)
    assert (await read_file_partial(ctx, {"path": "a.txt", "offset": -1, "limit": 1})).kind == "invalid_arguments"
    assert (await read_file_partial(ctx, {"path": "a.txt", "offset": 0, "limit": 0})).kind == "invalid_arguments"
    assert (await read_file_partial(ctx, {"path": "b.bin", "offset": 0, "limit": 1})).kind == "invalid_arguments"
    assert (await read_file_partial(ctx, {"path": "zz.txt", "offset": 0, "limit": 1})).kind == "not_found"
    assert (await read_file_partial(ctx, {"path": "../x", "offset": 0, "limit": 1})).kind == "invalid_arguments"


async def test_write_file_creates_parents_and_overwrites(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    first = await write_file(ctx, {"path": "new/deep/f.txt", "content": "héllo"})
    assert first.kind == "success" and first.data == {"path": "new/deep/f.txt", "bytes": 6}
    second = await write_file(ctx, {"path": "new/deep/f.txt", "content": "bye"})
    assert second.data["bytes"] == 3
    assert (tmp_path / "new" / "deep" / "f.txt").read_text() == "bye"


async def test_write_file_failures(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "plain").write_text("x")
    ctx = make_ctx(tmp_path)
    onto_dir = await write_file(ctx, {"path": "d", "content": "x"})
    assert onto_dir.kind == "invalid_arguments" and "directory" in str(onto_dir.message)
    under_file = await write_file(ctx, {"path": "plain/child.txt", "content": "x"})
    assert under_file.kind == "invalid_arguments"
    root = await write_file(ctx, {"path": ".", "content": "x"})
    assert root.kind == "invalid_arguments"
    not_text = await write_file(ctx, {"path": "n.txt", "content": 5})
    assert not_text.kind == "invalid_arguments" and not (tmp_path / "n.txt").exists()


async def test_list_directory_puts_folders_first_alphabetically_and_hides_bookkeeping(tmp_path: Path) -> None:
    for name in ("zeta", "alpha", ".orchestration", ".hidden"):
        (tmp_path / name).mkdir()
    for name in ("b.txt", "A.txt", ".env"):
        (tmp_path / name).write_text("12")
    result = await list_directory(make_ctx(tmp_path), {})
    assert result.kind == "success" and result.data["path"] == "."
    assert [(e["name"], e["type"]) for e in result.data["entries"]] == [
        (".hidden", "directory"),
        ("alpha", "directory"),
        ("zeta", "directory"),
        (".env", "file"),
        ("A.txt", "file"),
        ("b.txt", "file"),
    ]
    assert result.data["entries"][-1]["size"] == 2 and result.data["truncated"] is False


async def test_list_directory_of_a_subfolder_and_failures(tmp_path: Path) -> None:
    (tmp_path / "sub" / ".orchestration").mkdir(parents=True)
    (tmp_path / "sub" / "f.txt").write_text("")
    ctx = make_ctx(tmp_path)
    sub = await list_directory(ctx, {"path": "sub"})
    assert [e["name"] for e in sub.data["entries"]] == [".orchestration", "f.txt"]  # only the top one is hidden
    assert (await list_directory(ctx, {"path": "sub/f.txt"})).kind == "invalid_arguments"
    assert (await list_directory(ctx, {"path": "nope"})).kind == "not_found"


async def test_list_directory_caps_the_entries(tmp_path: Path) -> None:
    for index in range(LIST_CAP + 3):
        (tmp_path / f"f{index:05}").write_text("")
    result = await list_directory(make_ctx(tmp_path), {"path": "."})
    assert len(result.data["entries"]) == LIST_CAP
    assert result.data["total"] == LIST_CAP + 3 and result.data["truncated"] is True


async def test_a_hard_link_to_an_outside_file_is_neither_read_nor_overwritten(layout: Layout) -> None:
    # a hard link is another name for the outside file itself: containment sees only the workspace name
    secret = layout.outside / "secret.txt"
    os.link(secret, layout.ws / "linked.txt")
    before = layout.snapshot()
    ctx = layout.ctx()
    read = await read_file(ctx, {"path": "linked.txt"})
    assert read.kind == "permission_denied" and "2 hard links" in str(read.message)
    assert "top secret" not in str(read.data) + str(read.message)
    partial = await read_file_partial(ctx, {"path": "linked.txt", "offset": 0, "limit": 10})
    assert partial.kind == "permission_denied"
    written = await write_file(ctx, {"path": "linked.txt", "content": "pwned"})
    assert written.kind == "permission_denied" and "hard links" in str(written.message)
    assert layout.snapshot() == before  # the outside file kept its bytes (nothing truncated first)
    assert (layout.ws / "linked.txt").read_bytes() == secret.read_bytes()
    # a file of its own is fine again
    (layout.ws / "linked.txt").unlink()
    assert (await write_file(ctx, {"path": "linked.txt", "content": "mine"})).kind == "success"
    assert (await read_file(ctx, {"path": "linked.txt"})).data["content"] == "mine"


async def test_write_file_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with trio.fail_after(budget(10)):  # a blocking open would hang in a worker thread, not here
        result = await trio.to_thread.run_sync(
            lambda: trio.run(write_file, make_ctx(tmp_path), {"path": "pipe", "content": "x"}), abandon_on_cancel=True
        )
    assert result.kind in ("invalid_arguments", "unavailable")
