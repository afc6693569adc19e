"""``glob_files`` (path patterns) and ``search_text`` (per-line regex), both contained and capped.

Walks run in a worker thread (``walk.in_worker``) and never enter ``.orchestration`` or ``.git``.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

from orchestrator.conversation import ToolResult
from orchestrator.tools.base import ToolContext, ToolError, success
from orchestrator.tools.files import linked_elsewhere, os_error, sniff_binary
from orchestrator.tools.paths import BOOKKEEPING_MESSAGE, ORCHESTRATION, resolve_path, workspace_root
from orchestrator.tools.walk import Walk, in_worker

__all__ = ["GLOB_CAP", "SEARCH_CAP", "compile_glob", "expand_braces", "glob_files", "search_text"]

#: glob_files returns at most this many paths (sorted); search_text at most this many matches.
GLOB_CAP = 500
SEARCH_CAP = 200
#: A matching line is cut to this many characters in the result.
LINE_CHARS = 300
#: search_text skips files larger than this, and only looks at this much of any one line.
_MAX_FILE_BYTES = 4_000_000
_MAX_LINE_SCAN = 10_000
_MAX_EXPANSIONS = 64
#: Folders a search walk does not descend into (a path naming one explicitly is still searched).
SEARCH_SKIP = frozenset({".git", "node_modules", "__pycache__", ".venv"})


def expand_braces(pattern: str) -> list[str]:
    """``a{b,c{d,e}}`` → ``[ab, acd, ace]``; unbalanced braces stay literal. At most 64 results."""
    depth, start = 0, -1
    for index, char in enumerate(pattern):
        if char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                options, level, piece = [], 0, ""
                for inner in pattern[start + 1 : index]:
                    if inner == "," and level == 0:
                        options.append(piece)
                        piece = ""
                        continue
                    level += inner == "{"
                    level -= inner == "}"
                    piece += inner
                options.append(piece)
                if len(options) == 1:  # "{x}" is literal in shells; keep it so
                    continue
                head, tail = pattern[:start], pattern[index + 1 :]
                results: list[str] = []
                for option in options:
                    for expanded in expand_braces(head + option + tail):
                        if expanded not in results:
                            results.append(expanded)
                        if len(results) > _MAX_EXPANSIONS:
                            too_many = f"pattern expands to more than {_MAX_EXPANSIONS} forms"
                            raise ToolError("invalid_arguments", too_many)
                return results
    return [pattern]


def _class_end(segment: str, index: int) -> int:
    """Index of the ``]`` closing the class opened at ``index``, or -1 (then ``[`` is literal)."""
    start = index + 1
    if segment[start : start + 1] in ("!", "^"):
        start += 1
    if segment[start : start + 1] == "]":
        start += 1
    return segment.find("]", start)


def _segment(segment: str) -> str:
    out = "(?!\\.)" if segment[:1] in ("*", "?", "[") else ""
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            out += "[^/]*"
        elif char == "?":
            out += "[^/]"
        elif char == "[" and _class_end(segment, index) > 0:
            end = _class_end(segment, index)
            body = segment[index + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            body = body.replace("\\", "\\\\").replace("[", "\\[")
            out += "[" + ("^" if negate else "") + body + "]"
            index = end
        else:
            out += re.escape(char)
        index += 1
    return out


def _one_glob(pattern: str) -> str:
    segments = [s for s in pattern.split("/") if s not in ("", ".")]
    out = ""
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            out += "(?!\\.)[^/]+(?:/(?!\\.)[^/]+)*" if last else "(?:(?!\\.)[^/]+/)*"
        else:
            out += _segment(segment) + ("" if last else "/")
    return out


def compile_glob(pattern: str) -> tuple[re.Pattern[str], list[str]]:
    """The full-match regex for a workspace-relative glob, and its brace expansions.

    ``*`` and ``?`` stay inside one path segment, ``**`` spans any number of folders, ``{a,b}``
    alternates, ``[abc]`` / ``[!abc]`` are classes. Wildcards do not match a leading dot (write it).
    Raises ``ToolError``: absolute patterns and ``..`` segments escape the workspace.
    """
    if not pattern.strip():
        raise ToolError("invalid_arguments", "pattern must not be empty")
    forms = expand_braces(pattern.strip())
    for form in forms:
        if form.startswith("/") or ".." in form.split("/"):
            raise ToolError("invalid_arguments", "path escapes the workspace: patterns are relative to its root")
        first = next((s for s in form.split("/") if s not in ("", ".")), "")
        if first == ORCHESTRATION:
            raise ToolError("permission_denied", BOOKKEEPING_MESSAGE)
    try:
        return re.compile("|".join(f"(?:{_one_glob(form)})" for form in forms)), forms
    except re.error as exc:
        raise ToolError("invalid_arguments", f"pattern is not a valid glob: {exc}") from None


def _literal_prefix(forms: list[str]) -> str:
    """The longest folder prefix (no wildcard) shared by every form: where the walk starts."""
    prefixes = []
    for form in forms:
        parts = []
        for segment in [s for s in form.split("/") if s not in ("", ".")][:-1]:
            if any(c in segment for c in "*?["):
                break
            parts.append(segment)
        prefixes.append(parts)
    common = prefixes[0] if prefixes else []
    for parts in prefixes[1:]:
        size = 0
        while size < min(len(common), len(parts)) and common[size] == parts[size]:
            size += 1
        common = common[:size]
    return "/".join(common)


def _glob(root: str, regex: re.Pattern[str], forms: list[str], stop: threading.Event) -> tuple[list[str], bool]:
    segments = [[s for s in form.split("/") if s not in ("", ".")] for form in forms]
    deep = any("**" in parts for parts in segments)
    max_depth = max(len(parts) for parts in segments)
    dotted = any(part.startswith(".") for parts in segments for part in parts)

    def skip(rel: str, name: str) -> bool:
        if name == ".git" or (name.startswith(".") and not dotted):
            return True
        return not deep and rel.count("/") + 1 >= max_depth

    start = os.path.join(root, _literal_prefix(forms))
    if os.path.realpath(start) != os.path.normpath(start):  # a symlink in the prefix: never followed
        start = root
    walk = Walk(root=root, stop=stop, skip_dir=skip)
    found: list[str] = []
    for rel, _real, _size in walk.files(start):
        if regex.fullmatch(rel):
            found.append(rel)
            if len(found) > 20 * GLOB_CAP:
                walk.exhausted = True
                break
    found.sort()
    return found, walk.exhausted


async def glob_files(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``{pattern}`` → ``{pattern, matches, count, truncated}``: workspace files, sorted, capped."""
    pattern = arguments.get("pattern")
    try:
        if not isinstance(pattern, str):
            raise ToolError("invalid_arguments", "pattern must be a string")
        regex, forms = compile_glob(pattern)
        root = workspace_root(ctx.workspace)
        found, exhausted = await in_worker(lambda stop: _glob(root, regex, forms, stop))
    except ToolError as exc:
        return exc.result()
    truncated = exhausted or len(found) > GLOB_CAP
    return success({"pattern": pattern, "matches": found[:GLOB_CAP], "count": len(found), "truncated": truncated})


def _search_file(real: str, rel: str, regex: re.Pattern[str], matches: list[dict[str, Any]]) -> bool:
    """Append this file's matching lines; False once the match cap is reached."""
    try:
        with open(real, "rb") as handle:
            if os.fstat(handle.fileno()).st_nlink > 1:  # another name of this file may be outside the workspace
                return True
            if sniff_binary(handle.read(8192)):
                return True
            handle.seek(0)
            for number, raw in enumerate(handle, start=1):
                line = raw[:_MAX_LINE_SCAN].decode("utf-8", "replace").rstrip("\r\n")
                if regex.search(line):
                    text = line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " […]"
                    matches.append({"path": rel, "line": number, "text": text})
                    if len(matches) >= SEARCH_CAP + 1:
                        return False
    except OSError:
        pass
    return True


_Target = tuple[str, str, bool]  # (rel, real, is_dir)


def _search(root: str, targets: list[_Target], regex: re.Pattern[str], stop: threading.Event) -> dict[str, Any]:
    walk = Walk(root=root, stop=stop, skip_dir=lambda _rel, name: name in SEARCH_SKIP)
    matches: list[dict[str, Any]] = []
    files = 0
    full = False
    for rel, real, is_dir in targets:
        found = walk.files(real) if is_dir else iter([(rel, real, os.path.getsize(real))])
        for file_rel, file_real, size in found:
            if stop.is_set():
                break
            if size > _MAX_FILE_BYTES:
                continue
            files += 1
            if not _search_file(file_real, file_rel, regex, matches):
                full = True
                break
        if full or walk.exhausted:
            break
    return {
        "matches": matches[:SEARCH_CAP],
        "filesSearched": files,
        "truncated": full or walk.exhausted or len(matches) > SEARCH_CAP,
    }


async def search_text(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``{pattern, paths?}`` → ``{pattern, matches: [{path, line, text}], filesSearched, truncated}``.

    ``pattern`` is a (Python) regular expression matched against each line; ``line`` is 1-based.
    Binary files, files over 4 MB, ``.git``, ``.orchestration``, ``node_modules``, ``.venv`` and
    ``__pycache__`` are skipped while walking folders.
    """
    pattern, paths = arguments.get("pattern"), arguments.get("paths") or ["."]
    try:
        if not isinstance(pattern, str) or not pattern:
            raise ToolError("invalid_arguments", "pattern must be a non-empty regular expression")
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise ToolError("invalid_arguments", "paths must be an array of strings")
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ToolError("invalid_arguments", f"pattern is not a valid regular expression: {exc}") from None
        targets = []
        for raw in paths:
            resolved = resolve_path(ctx.workspace, raw)
            try:
                is_dir = resolved.real.is_dir()
                refusal = None if is_dir else linked_elsewhere(resolved.rel, resolved.real.stat())
            except OSError as exc:
                raise os_error(exc, resolved.rel) from None
            if refusal is not None:
                raise refusal
            targets.append((resolved.rel, str(resolved.real), is_dir))
        root = workspace_root(ctx.workspace)
        found = await in_worker(lambda stop: _search(root, targets, regex, stop))
    except ToolError as exc:
        return exc.result()
    return success({"pattern": pattern, **found})
