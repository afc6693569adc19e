"""The docs name only things that exist, and nothing outside the repository.

``docs/architecture.md`` maps every feature to the module that implements it. This test keeps that map
true: every path and every qualified symbol it names must exist, every row of its feature tables must
name at least one module, and the same path and link checks run over every other page of ``docs/``
and ``README.md``. No file in the repository may cite documents that are not in it.

How a page names things (the convention the page states in its "How to read this page" section):

* **A path** is a backticked token (or, in ``docs/architecture.md`` only, a word in a fenced code
  block) made of letters, digits, ``_``, ``-``, ``.``, ``/`` and ``*`` that contains a ``/`` and ends
  in ``/`` or in a file name with an extension (``engine/run.py``, ``web/static/``, ``tests/crash/``,
  ``guild/roles/*.md``), or is a bare ``name.py``, or the name of a file at the repository root
  (``Dockerfile``). Its first segment must be a top-level entry of ``src/orchestrator/``, of the
  repository or of ``docs/``; anything else (``application/json``, ``tools/list``,
  ``.orchestration/queue.json``, ``/api/runs``, ``<workspace>/tests/x.py``) is not a path. It resolves
  against ``src/orchestrator/``, then the repository root, then ``docs/``; a glob must match
  something. A bare ``name.py`` must exist under ``src/orchestrator/`` or the repository root (in
  ``docs/architecture.md``), or anywhere in the repository (on the other pages, which name a module
  beside its directory).
* **A symbol** is written ``path.py:name`` in one backticked token (or one word of a code block):
  ``engine/run.py:Run.run_role``.
  ``name`` is a top-level function, class or assignment of that module, or a dotted path into it: a
  class's methods, class-level fields and ``self.<attr>`` assignments, a function's nested functions
  (``service/app.py:create_app.healthz``). Checked with ``ast``; nothing is imported. The forms the
  check cannot read — `` `engine/run.py` (`run_role`) ``, ``engine.run.Run`` — fail with the form to use.
* **A link** ``[text](page.md#anchor)`` must reach an existing file, and the anchor a heading of it.

Failures name the page, the line and the missing thing.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.helpers import REPO

PACKAGE = REPO / "src" / "orchestrator"
DOCS = REPO / "docs"
ARCHITECTURE = DOCS / "architecture.md"
PAGES = [*sorted(DOCS.glob("*.md")), REPO / "README.md"]
BASES = (PACKAGE, REPO, DOCS)

_TICKED = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"[\w.*-]+(?:/[\w.*-]+)*/?")
_SYMBOL = re.compile(r"(?P<path>[\w.-]+(?:/[\w.-]+)*\.py):(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")
_LINK = re.compile(r"\[[^\]\n]*\]\((?P<target>[^)\s]+)\)")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Claim:
    """One thing a page names: a path (``symbol`` empty) or a symbol of the module at ``path``."""

    page: Path
    line: int
    path: str
    symbol: str = ""

    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


@functools.cache
def _roots() -> frozenset[str]:
    """First path segments that make a token a path: the package's, the repository's and docs/'s entries."""
    return frozenset(p.name for base in BASES for p in base.iterdir() if not p.name.startswith("."))


def _is_path(token: str) -> bool:
    if not _PATH.fullmatch(token) or token.startswith(("-", ".")) or "//" in token:
        return False
    if "/" not in token:
        return ("*" not in token and token.endswith(".py")) or (REPO / token).is_file()
    first, last = token.split("/", 1)[0], token.rstrip("/").rsplit("/", 1)[-1]
    has_extension = "." in last.strip(".")
    return first in _roots() and (token.endswith("/") or has_extension)


def _claims_in(text: str, page: Path, line: int) -> Iterator[Claim]:
    """The claims in one span of text: a backticked token's content, or a word of a code block."""
    text = text.strip().rstrip(",;)").lstrip("(")
    symbol = _SYMBOL.fullmatch(text)
    if symbol:
        yield Claim(page, line, symbol["path"], symbol["name"])
    elif _is_path(text):
        yield Claim(page, line, text)


def claims(page: Path, text: str | None = None) -> Iterator[Claim]:
    """Every path and symbol ``page`` (or ``text``, read as if it were that page) names, with its line."""
    fenced = False
    for number, line in enumerate((page.read_text() if text is None else text).splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced and page != ARCHITECTURE:  # other pages' code blocks show commands and tool output
            continue
        spans = line.split() if fenced else _TICKED.findall(line)
        for span in spans:
            yield from _claims_in(span, page, number)


def _resolve(claim: Claim) -> Path | None:
    """The file or directory a claim names, or ``None`` when there is none."""
    path = claim.path
    if "/" not in path:
        found = [base / path for base in (PACKAGE, REPO) if (base / path).exists()]
        if not found and claim.page != ARCHITECTURE:
            found = [p for p in _repository_files() if p.name == path]
        return found[0] if found else None
    for base in BASES:
        if "*" in path:
            matches = sorted(base.glob(path))
            if matches:
                return matches[0]
        elif (base / path).exists():
            return base / path
    return None


@functools.cache
def defined_names(module: Path) -> frozenset[str]:
    """Every name ``module`` defines, qualified: ``f``, ``C``, ``C.method``, ``C.field``, ``C.attr``
    (``self.attr = …`` in a method), ``f.inner`` (a nested function)."""
    names: set[str] = set()

    def visit(body: list[ast.stmt], prefix: str, cls: bool) -> None:
        """Names defined in ``body``: a module's or class's (``cls``) assignments count, a function's
        local variables do not."""
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qualified = prefix + node.name
                names.add(qualified)
                is_class = isinstance(node, ast.ClassDef)
                visit(node.body, qualified + ".", is_class)
                if cls and not is_class:  # a method: its self.<attr> assignments belong to the class
                    for sub in ast.walk(node):
                        if (
                            isinstance(sub, ast.Attribute)
                            and isinstance(sub.ctx, ast.Store)
                            and isinstance(sub.value, ast.Name)
                            and sub.value.id == "self"
                        ):
                            names.add(prefix + sub.attr)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and (cls or not prefix):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            names.add(prefix + name.id)
            elif isinstance(node, (ast.If, ast.Try)) and not prefix:
                visit(node.body, prefix, cls)

    visit(ast.parse(module.read_text()).body, "", False)
    return frozenset(names)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@functools.cache
def anchors(text: str) -> frozenset[str]:
    """The anchors of a page's headings."""
    fenced, found = False, set()
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            found.add(_slug(line.lstrip("#")))
    return frozenset(found)


def problems(page: Path, text: str | None = None) -> list[str]:
    """What ``page`` (or ``text``, read as if it were that page) names that does not exist, one line
    each: ``page:line: …``."""
    text = page.read_text() if text is None else text
    found: list[str] = []
    for claim in claims(page, text):
        target = _resolve(claim)
        if target is None:
            found.append(f"{claim.where()}: no such path `{claim.path}`")
        elif claim.symbol:
            if target.suffix != ".py" or not target.is_file():
                found.append(f"{claim.where()}: `{claim.path}` is not a module (for `{claim.symbol}`)")
            elif claim.symbol not in defined_names(target):
                found.append(f"{claim.where()}: `{claim.path}` defines no `{claim.symbol}`")
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
        if fenced:
            continue
        for link in _LINK.finditer(line):
            target = link["target"]
            if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            linked = (page.parent / file_part).resolve() if file_part else page
            if file_part and not linked.exists():
                found.append(f"{page.relative_to(REPO)}:{number}: link to a missing file `{target}`")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text() if file_part else text):
                found.append(f"{page.relative_to(REPO)}:{number}: link to a missing heading `{target}`")
    return found


def test_architecture_names_only_paths_and_symbols_that_exist() -> None:
    found = problems(ARCHITECTURE)
    assert not found, "docs/architecture.md names what does not exist:\n" + "\n".join(found)


_OLD_STYLE = re.compile(r"`(?P<path>[\w./-]+\.py)` \(`(?P<name>[A-Za-z_]\w*(?:\.\w+)*)`")
_DOTTED = re.compile(r"(?P<dotted>[a-z_]+(?:\.[A-Za-z_]\w*){2,})")


def form_problems(text: str) -> list[str]:
    """Symbols named in another form than ``path.py:name``: a module path followed by a parenthesis
    that starts with a backticked name (`` `engine/run.py` (`run_role`) ``), or a dotted module path
    (``engine.run.Run``) whose first part is a package of ``src/orchestrator/``."""
    found: list[str] = []
    fenced = False
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir()}
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        for old in _OLD_STYLE.finditer(line):
            found.append(
                f"docs/architecture.md:{number}: write `{old['path']}:{old['name']}`, "
                f"not `{old['path']}` (`{old['name']}`)"
            )
        spans = line.split() if fenced else _TICKED.findall(line)
        for span in spans:
            dotted = _DOTTED.fullmatch(span.strip("(),;"))
            if dotted and dotted["dotted"].split(".")[0] in packages:
                found.append(f"docs/architecture.md:{number}: write `{dotted['dotted']}` as `<path>.py:<name>`")
    return found


def test_architecture_names_symbols_in_the_documented_form() -> None:
    """Symbols the test can check: ``path.py:name``, never the forms it cannot."""
    found = form_problems(ARCHITECTURE.read_text())
    assert not found, "\n".join(found)


def test_architecture_names_many_symbols() -> None:
    """The check above checks something: the page names modules and symbols in the documented form."""
    named = list(claims(ARCHITECTURE))
    assert len([c for c in named if c.symbol]) > 100
    assert len({c.path for c in named}) > 100


def test_every_feature_row_names_a_module() -> None:
    """One hop: each row of a feature table (a table with a "Module" column) names a path or a symbol."""
    lines = ARCHITECTURE.read_text().splitlines()
    missing: list[str] = []
    column: int | None = None
    for number, line in enumerate(lines, 1):
        if not line.startswith("|"):
            column = None
            continue
        cells = _cells(line)
        if column is None:
            column = cells.index("Module") if "Module" in cells else -1
            continue
        if column < 0 or set(line) <= set("|-: "):
            continue
        if not list(_module_claims(cells[column], number)) and not cells[column].startswith("—"):
            missing.append(f"docs/architecture.md:{number}: no module for `{cells[0]}`")
    assert not missing, "\n".join(missing)


def _cells(row: str) -> list[str]:
    """A table row's cells; a ``|`` inside backticks does not split."""
    cells, current, ticked = [], "", False
    for char in row.strip().strip("|"):
        if char == "`":
            ticked = not ticked
        if char == "|" and not ticked:
            cells.append(current.strip())
            current = ""
        else:
            current += char
    return [*cells, current.strip()]


def _module_claims(cell: str, number: int) -> Iterator[Claim]:
    for token in _TICKED.findall(cell):
        yield from _claims_in(token, ARCHITECTURE, number)


@pytest.mark.parametrize("page", [p for p in PAGES if p != ARCHITECTURE], ids=lambda p: p.name)
def test_other_pages_name_only_paths_that_exist(page: Path) -> None:
    found = problems(page)
    assert not found, f"{page.relative_to(REPO)} names what does not exist:\n" + "\n".join(found)


# Citations of documents that are not in the repository. Spelled in pieces so this file does not match.
_FOREIGN = re.compile(
    "|".join(
        [
            r"shared/" + r"(?!corpus\b|seeds\b)\w",  # ../shared/corpus and ../shared/seeds: optional test data
            r"(?:design|orchestrator\.md|engine\.md|workflow-server\.md|architecture\.md|style\.md|seed)\s*" + "\u00a7",
            "\u00a7" + r"\s*\d",
            r"design " + r"notes",
        ]
    )
)


@functools.cache
def _repository_files() -> tuple[Path, ...]:
    """Every file of the repository that git tracks or would track (ignored files, like ``.venv/``, not)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return tuple(REPO / name for name in listed if (REPO / name).is_file())


def test_no_file_cites_documents_outside_the_repository() -> None:
    found: list[str] = []
    for path in _repository_files():
        try:
            text = path.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            match = _FOREIGN.search(line)
            if match:
                found.append(f"{path.relative_to(REPO)}:{number}: cites `{match.group(0)}` (not in the repository)")
    assert not found, "\n".join(found)


def test_the_checks_catch_what_they_claim_to() -> None:
    """A wrong path, a wrong symbol, a wrong link and a wrong anchor are each reported with their line."""
    text = (
        "# A probe page\n"
        "`engine/run.py`, `engine/run.py:Run`, `tests/crash/` and ``application/json`` pass.\n"
        "```\nengine/no_such_module.py in a code block\n```\n"
        "`engine/run.py:no_such_function` does not exist.\n"
        "[gone](architecture.md#no-such-heading), [here](#a-probe-page), [nowhere](nowhere.md).\n"
    )
    assert problems(ARCHITECTURE, text) == [
        "docs/architecture.md:4: no such path `engine/no_such_module.py`",
        "docs/architecture.md:6: `engine/run.py` defines no `no_such_function`",
        "docs/architecture.md:7: link to a missing heading `architecture.md#no-such-heading`",
        "docs/architecture.md:7: link to a missing file `nowhere.md`",
    ]
    assert form_problems("`engine/run.py` (`run_role`)\n```\nengine.runner.execute_run\n```\n") == [
        "docs/architecture.md:1: write `engine/run.py:run_role`, not `engine/run.py` (`run_role`)",
        "docs/architecture.md:3: write `engine.runner.execute_run` as `<path>.py:<name>`",
    ]
    assert _FOREIGN.search("see ../shared/" + "design/engine.md") and _FOREIGN.search("engine.md " + "\u00a73")
    assert not _FOREIGN.search("../shared/corpus/workflows when present")
