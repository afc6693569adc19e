"""``repo_map``: one line per top-level declaration, grouped by file, for Python and TypeScript/JavaScript.

Python is read with ``ast`` (classes, functions, assignments to plain names). TypeScript/JavaScript
goes through a small scanner that tracks brackets, strings, template literals, comments and regex
literals, so only declarations at nesting depth 0 are listed. Tests, declaration files, vendored code,
hidden folders and build output are left out.
"""

from __future__ import annotations

import ast
import os
import re
import threading
from typing import Any

from orchestrator.conversation import ToolResult
from orchestrator.tools.base import ToolContext, ToolError, success
from orchestrator.tools.files import os_error
from orchestrator.tools.paths import resolve_path, workspace_root
from orchestrator.tools.walk import Walk, in_worker

__all__ = ["MAP_CAP", "python_symbols", "repo_map", "script_symbols", "wanted_file"]

#: The rendered map is cut (at a file boundary) past this many characters.
MAP_CAP = 60_000
_LINE_CHARS = 160
_MAX_FILE_BYTES = 1_000_000

SKIP_DIRS = frozenset(
    {
        "node_modules", "vendor", "third_party", ".venv", "venv", "site-packages",
        "dist", "build", "out", "__pycache__", "tests", "__tests__",
    }
)  # fmt: skip
PY_SUFFIXES = (".py", ".pyi")
SCRIPT_SUFFIXES = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")
_TEST_FILE = re.compile(r"(^test_.*\.pyi?$)|(_test\.pyi?$)|(^conftest\.py$)|(\.(test|spec)\.[^.]+$)")
_GENERATED = re.compile(r"\.d\.[mc]?ts$|\.min\.[mc]?js$")

_DECLARATION = re.compile(
    r"^(?:export\s+(?:default\s+)?)?(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?"
    r"(?:function\b\s*\*?|class\b|const\b|let\b|var\b|interface\b|type\b|enum\b|namespace\b)\s*[A-Za-z_$]"
)
_OTHER_EXPORT = re.compile(r"^export\s*(?:default\b|\*|\{|=)")
_REGEX_BEFORE = set("(,=:[!&|?{};+-*%<>~^")
_REGEX_KEYWORDS = ("return", "typeof", "case", "do", "else", "in", "of", "void", "yield", "await")


def wanted_file(name: str) -> bool:
    """True for a Python or TS/JS source that is neither a test nor a declaration/minified file."""
    if not name.endswith(PY_SUFFIXES + SCRIPT_SUFFIXES):
        return False
    return not _TEST_FILE.search(name) and not _GENERATED.search(name)


def _skip_dir(_rel: str, name: str) -> bool:
    return name.startswith(".") or name in SKIP_DIRS


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _LINE_CHARS else text[: _LINE_CHARS - 2] + " …"


def python_symbols(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` for each top-level class, function and assignment to a name."""
    out: list[tuple[int, str]] = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            bases = ", ".join(ast.unparse(b) for b in [*node.bases, *node.keywords])
            out.append((node.lineno, _short(f"class {node.name}({bases})" if bases else f"class {node.name}")))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            out.append((node.lineno, _short(f"{prefix} {node.name}({ast.unparse(node.args)}){returns}")))
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if names:
                out.append((node.lineno, _short(" = ".join(names))))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.append((node.lineno, _short(f"{node.target.id}: {ast.unparse(node.annotation)}")))
    return out


def _top_level_lines(source: str) -> list[int]:
    """0-based indexes of the lines that begin outside any bracket, string, template or comment."""
    tops = [0]
    stack: list[str] = []  # "(", "[", "{", or "${" for a template expression
    state = ""  # "", "'", '"', "`", "//", "/*", "re"
    previous = ""  # last significant character outside strings and comments
    line, index, n = 0, 0, len(source)
    while index < n:
        char = source[index]
        two = source[index : index + 2]
        if char == "\n":
            line += 1
            if state in ("'", '"', "//", "re"):
                state = ""  # those never span lines: recover from a stray quote in JSX text
            if not stack and not state:
                tops.append(line)
            index += 1
            continue
        if state in ("'", '"'):
            if char == "\\":
                index += 1
            elif char == state:
                state, previous = "", char
        elif state == "`":
            if char == "\\":
                index += 1
            elif char == "`":
                state, previous = "", char
            elif two == "${":
                stack.append("${")
                state = ""
                index += 1
        elif state == "/*":
            if two == "*/":
                state = ""
                index += 1
        elif state == "re":
            if char == "\\":
                index += 1
            elif char == "[":
                close = source.find("]", index + 1)
                index = close if close != -1 and "\n" not in source[index:close] else index
            elif char == "/":
                state, previous = "", "/"
        elif state == "//":
            pass
        elif two in ("//", "/*"):
            state = two
            index += 1
        elif char in "'\"`":
            state = char
        elif char == "/":
            word = re.search(r"([A-Za-z_$]+)\s*$", source[max(0, index - 12) : index])
            if not previous or previous in _REGEX_BEFORE or (word and word.group(1) in _REGEX_KEYWORDS):
                state = "re"
            else:
                previous = char
        elif char in "([{":
            stack.append(char)
            previous = char
        elif char in ")]}":
            if stack:
                opened = stack.pop()
                if opened == "${":
                    state = "`"
            previous = char
        elif not char.isspace():
            previous = char
        index += 1
    return tops


def _script_head(line: str, *, declaration: bool) -> str:
    """The declaration without its body: cut at the first ``{`` outside parentheses, brackets and quotes."""
    text = line.strip()
    if declaration:
        depth, quote = 0, ""
        for index, char in enumerate(text):
            if quote:
                quote = "" if char == quote and text[index - 1] != "\\" else quote
            elif char in "'\"`":
                quote = char
            elif char in "([":
                depth += 1
            elif char in ")]":
                depth -= 1
            elif char == "{" and depth == 0:
                text = text[:index]
                break
    text = text.rstrip().rstrip(";").rstrip()
    if text.endswith("=") and not text.endswith("=>"):
        text = text[:-1].rstrip()
    return _short(text)


def script_symbols(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` for each top-level TS/JS declaration or export statement."""
    lines = source.split("\n")
    out = []
    for index in _top_level_lines(source):
        if index < len(lines):
            text = lines[index]
            if _DECLARATION.match(text):
                out.append((index + 1, _script_head(text, declaration=True)))
            elif _OTHER_EXPORT.match(text):
                out.append((index + 1, _script_head(text, declaration=False)))
    return out


def _symbols(real: str, name: str) -> list[tuple[int, str]] | None:
    try:
        with open(real, "rb") as handle:
            if os.fstat(handle.fileno()).st_nlink > 1:  # another name of this file may be outside the workspace
                return None
            source = handle.read(_MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(source) > _MAX_FILE_BYTES or b"\x00" in source[:8192]:
        return None
    text = source.decode("utf-8", "replace")
    if name.endswith(PY_SUFFIXES):
        try:
            return python_symbols(text)
        except (SyntaxError, ValueError, RecursionError):
            return [(0, "(could not be parsed)")]
    return script_symbols(text)


def _map(root: str, start: str, single: tuple[str, str] | None, stop: threading.Event) -> dict[str, Any]:
    walk = Walk(root=root, stop=stop, skip_dir=_skip_dir)
    if single is not None:
        files = iter([(single[0], single[1], 0)])
    else:
        files = ((rel, real, size) for rel, real, size in walk.files(start) if wanted_file(os.path.basename(rel)))
    blocks: list[str] = []
    used = file_count = symbol_count = 0
    truncated = False
    for rel, real, _size in files:
        if stop.is_set():
            break
        symbols = _symbols(real, os.path.basename(rel))
        if not symbols:
            continue
        block = rel + "\n" + "".join(f"  {number}: {text}\n" for number, text in symbols)
        if used + len(block) > MAP_CAP:
            truncated = True
            break
        blocks.append(block)
        used += len(block)
        file_count += 1
        symbol_count += len(symbols)
    return {
        "map": "".join(blocks),
        "files": file_count,
        "symbols": symbol_count,
        "truncated": truncated or walk.exhausted,
    }


async def repo_map(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    """``{path?}`` → ``{path, map, files, symbols, truncated}``; ``map`` has a header line per file
    followed by ``  <line>: <declaration>`` lines."""
    try:
        resolved = resolve_path(ctx.workspace, arguments.get("path") or ".")
        try:
            is_dir = resolved.real.is_dir()
            if not is_dir:
                resolved.real.stat()
        except OSError as exc:
            raise os_error(exc, resolved.rel) from None
        if not is_dir and not resolved.rel.endswith(PY_SUFFIXES + SCRIPT_SUFFIXES):
            raise ToolError("invalid_arguments", f"{resolved.rel} is not a Python or TypeScript/JavaScript file")
        root = workspace_root(ctx.workspace)
        single = None if is_dir else (resolved.rel, str(resolved.real))
        found = await in_worker(lambda stop: _map(root, str(resolved.real), single, stop))
    except ToolError as exc:
        return exc.result()
    return success({"path": resolved.rel, **found})
