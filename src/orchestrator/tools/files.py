"""The file tools: ``read_file``, ``read_file_partial``, ``write_file``, ``list_directory``.

Every path goes through ``paths.resolve_path`` first. Failures are results: ``invalid_arguments``
(bad path, escape, binary or non-UTF-8 file, wrong file type), ``not_found``, ``permission_denied``
(``.orchestration``, a file with more than one hard link, or the OS said no), ``unavailable`` (any
other I/O error).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any

import trio

from orchestrator.conversation import ToolResult
from orchestrator.tools.base import ToolContext, ToolError, success
from orchestrator.tools.paths import Resolved, is_bookkeeping, resolve_path

__all__ = [
    "LIST_CAP",
    "PARTIAL_LINE_CAP",
    "READ_CAP",
    "linked_elsewhere",
    "list_directory",
    "os_error",
    "read_file",
    "read_file_partial",
    "sniff_binary",
    "write_file",
]

#: read_file returns at most this many bytes of a file (decoded), with ``truncated`` when cut.
READ_CAP = 100_000
#: read_file_partial returns at most this many lines per call, each cut at PARTIAL_LINE_CHARS.
PARTIAL_LINE_CAP = 2_000
PARTIAL_LINE_CHARS = 2_000
#: Files larger than this are line-counted in a worker thread.
_THREAD_THRESHOLD = 1_000_000
#: list_directory returns at most this many entries.
LIST_CAP = 1_000
_SNIFF = 8192


def os_error(exc: OSError, rel: str) -> ToolError:
    """Translate an ``OSError`` on ``rel`` into the tool error a model can act on."""
    if exc.errno == errno.ENOENT:
        return ToolError("not_found", f"no such file or directory: {rel}", {"path": rel})
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ToolError("permission_denied", f"permission denied: {rel}", {"path": rel})
    if exc.errno == errno.EISDIR:
        return ToolError("invalid_arguments", f"{rel} is a directory; use list_directory", {"path": rel})
    if exc.errno == errno.ENOTDIR:
        return ToolError("invalid_arguments", f"a parent of {rel} is not a directory", {"path": rel})
    if exc.errno == errno.ELOOP:
        return ToolError("invalid_arguments", f"{rel}: too many levels of symbolic links", {"path": rel})
    reason = exc.strerror or type(exc).__name__
    return ToolError("unavailable", f"{rel}: {reason}", {"path": rel})


def _at(resolved: Resolved) -> dict[str, str]:
    return {"path": resolved.rel}


def sniff_binary(head: bytes) -> bool:
    """A NUL byte in the first 8 KiB marks a file as binary (the same rule git and grep use)."""
    return b"\x00" in head[:_SNIFF]


def _decode(data: bytes, rel: str, *, cut: bool) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if cut and exc.start >= len(data) - 3:  # a character split by the cap, not a bad file
            return data[: exc.start].decode("utf-8")
        raise ToolError(
            "invalid_arguments", f"{rel} is not UTF-8 text (undecodable byte at offset {exc.start})", {"path": rel}
        ) from None


def linked_elsewhere(rel: str, info: os.stat_result) -> ToolError | None:
    """The refusal for a regular file with more than one hard link: its other names may lie outside the
    workspace (a hard link is a second name for the same file, and containment only sees this one), so the
    file tools neither read nor overwrite it."""
    if info.st_nlink <= 1:
        return None
    return ToolError(
        "permission_denied",
        f"{rel} has {info.st_nlink} hard links; the file tools do not read or write a file that also lives "
        "under another name, which may be outside the workspace (copy it to a file of its own first)",
        {"path": rel},
    )


def _open_regular(resolved: Resolved) -> tuple[int, os.stat_result]:
    fd = os.open(resolved.real, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | os.O_NONBLOCK)
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        os.close(fd)
        raise ToolError("invalid_arguments", f"{resolved.rel} is a directory; use list_directory", _at(resolved))
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ToolError("invalid_arguments", f"{resolved.rel} is not a regular file", {"path": resolved.rel})
    refusal = linked_elsewhere(resolved.rel, info)
    if refusal is not None:
        os.close(fd)
        raise refusal
    return fd, info


def _read_head(resolved: Resolved, cap: int) -> tuple[bytes, int]:
    try:
        fd, info = _open_regular(resolved)
    except OSError as exc:
        raise os_error(exc, resolved.rel) from None
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read(cap), info.st_size
    except OSError as exc:
        raise os_error(exc, resolved.rel) from None


async def read_file(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``{path}`` → ``{path, content, size, truncated}``; at most ``READ_CAP`` bytes of the file."""
    try:
        resolved = resolve_path(ctx.workspace, arguments.get("path"))
        data, size = _read_head(resolved, READ_CAP)
        if sniff_binary(data):
            raise ToolError("invalid_arguments", f"{resolved.rel} is a binary file ({size} bytes)", _at(resolved))
        truncated = size > len(data)
        content = _decode(data, resolved.rel, cut=truncated)
    except ToolError as exc:
        return exc.result()
    result: dict[str, Any] = {"path": resolved.rel, "content": content, "size": size, "truncated": truncated}
    if truncated:
        result["note"] = f"showing the first {len(data)} of {size} bytes; use read_file_partial for the rest"
    return success(result)


def _read_lines(resolved: Resolved, offset: int, limit: int) -> dict[str, Any]:
    try:
        fd, _ = _open_regular(resolved)
    except OSError as exc:
        raise os_error(exc, resolved.rel) from None
    lines: list[str] = []
    total = 0
    try:
        with os.fdopen(fd, "rb") as handle:
            if sniff_binary(handle.read(_SNIFF)):
                raise ToolError("invalid_arguments", f"{resolved.rel} is a binary file", {"path": resolved.rel})
            handle.seek(0)
            for raw in handle:
                if offset <= total < offset + limit:
                    line = raw.rstrip(b"\r\n").decode("utf-8", "replace")
                    lines.append(line if len(line) <= PARTIAL_LINE_CHARS else line[:PARTIAL_LINE_CHARS] + " […]")
                total += 1
    except OSError as exc:
        raise os_error(exc, resolved.rel) from None
    return {"path": resolved.rel, "lines": lines, "offset": offset, "count": len(lines), "total": total}


async def read_file_partial(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``{path, offset, limit}`` → ``{path, lines, offset, count, total}`` (0-based line ``offset``).

    ``limit`` is clamped to ``PARTIAL_LINE_CAP``; an offset past the end gives no lines, not an error.
    Undecodable bytes show as U+FFFD (a log with one bad byte stays readable); binary files are refused.
    """
    offset, limit = arguments.get("offset"), arguments.get("limit")
    try:
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ToolError("invalid_arguments", "offset must be a non-negative integer (0-based line)")
        if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
            raise ToolError("invalid_arguments", "limit must be a positive integer")
        resolved = resolve_path(ctx.workspace, arguments.get("path"))
        limit = min(limit, PARTIAL_LINE_CAP)
        try:
            large = os.stat(resolved.real).st_size > _THREAD_THRESHOLD
        except OSError as exc:
            raise os_error(exc, resolved.rel) from None
        if large:
            data = await trio.to_thread.run_sync(_read_lines, resolved, offset, limit)
        else:
            data = _read_lines(resolved, offset, limit)
    except ToolError as exc:
        return exc.result()
    return success(data)


def _write(resolved: Resolved, payload: bytes) -> None:
    """Write through a descriptor checked before anything is truncated: opened without ``O_TRUNC`` (and
    without following a symlink or blocking on a FIFO), refused unless it is a regular file with one link,
    then truncated and written."""
    if resolved.real.is_dir():
        raise ToolError("invalid_arguments", f"{resolved.rel} is a directory", {"path": resolved.rel})
    try:
        resolved.real.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(resolved.real, flags, 0o644)
        with os.fdopen(fd, "wb") as handle:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ToolError("invalid_arguments", f"{resolved.rel} is not a regular file", _at(resolved))
            refusal = linked_elsewhere(resolved.rel, info)
            if refusal is not None:
                raise refusal
            os.ftruncate(fd, 0)
            handle.write(payload)
    except FileExistsError:
        raise ToolError("invalid_arguments", f"a parent of {resolved.rel} is a file", {"path": resolved.rel}) from None
    except OSError as exc:
        raise os_error(exc, resolved.rel) from None


async def write_file(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``{path, content}`` → ``{path, bytes}``: creates missing parents, replaces an existing file."""
    content = arguments.get("content")
    try:
        if not isinstance(content, str):
            raise ToolError("invalid_arguments", "content must be a string")
        resolved = resolve_path(ctx.workspace, arguments.get("path"))
        if resolved.rel == ".":
            raise ToolError("invalid_arguments", "path names the workspace root, not a file")
        payload = content.encode("utf-8", "surrogatepass")
        _write(resolved, payload)
    except ToolError as exc:
        return exc.result()
    return success({"path": resolved.rel, "bytes": len(payload)})


def _entries(resolved: Resolved) -> tuple[list[dict[str, Any]], int]:
    dirs: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    try:
        with os.scandir(resolved.real) as scan:
            for entry in scan:
                if resolved.rel == "." and is_bookkeeping(entry.name):
                    continue
                try:
                    is_dir = entry.is_dir()
                    is_link = entry.is_symlink()
                    size = None if is_dir else entry.stat().st_size
                except OSError:  # a dangling link or a racing delete: list it, without a size
                    is_dir, is_link, size = False, True, None
                item: dict[str, Any] = {"name": entry.name, "type": "directory" if is_dir else "file"}
                if size is not None:
                    item["size"] = size
                if is_link:
                    item["symlink"] = True
                (dirs if is_dir else files).append(item)
    except NotADirectoryError:
        raise ToolError("invalid_arguments", f"{resolved.rel} is a file; use read_file", _at(resolved)) from None
    except OSError as exc:
        raise os_error(exc, resolved.rel) from None
    ordered = sorted(dirs, key=lambda e: e["name"]) + sorted(files, key=lambda e: e["name"])
    return ordered, len(ordered)


async def list_directory(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``{path?}`` → ``{path, entries: [{name, type, size?, symlink?}], total, truncated}``.

    Directories first, then files, each group alphabetical; the root listing leaves out ``.orchestration``.
    """
    try:
        resolved = resolve_path(ctx.workspace, arguments.get("path") or ".")
        entries, total = await trio.to_thread.run_sync(_entries, resolved)
    except ToolError as exc:
        return exc.result()
    return success({"path": resolved.rel, "entries": entries[:LIST_CAP], "total": total, "truncated": total > LIST_CAP})
