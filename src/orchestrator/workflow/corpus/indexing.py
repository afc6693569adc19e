"""Reading corpus files and indexing techniques and resources (I/O; used only by ``load_corpus``).

Technique files are read now and parsed on first use (``TechniqueEntry``); resources are parsed now
(frontmatter ``name``/``version``, body). Unreadable technique files become entries with an error;
unreadable resource files are skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

import yaml

from orchestrator.workflow.corpus.markdown import parse_resource, parse_technique
from orchestrator.workflow.corpus.model import Resource, TechniqueEntry

__all__ = ["READ_ERRORS", "error_text", "index_resources", "index_techniques", "read_text"]

READ_ERRORS = (OSError, UnicodeDecodeError)


def read_text(path: Path | str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def error_text(exc: BaseException) -> str:
    if isinstance(exc, yaml.YAMLError):
        return f"invalid YAML: {' '.join(str(exc).split())}"
    if isinstance(exc, RecursionError):
        return "document nested too deeply"
    if isinstance(exc, UnicodeDecodeError):
        return "file is not UTF-8 text"
    if isinstance(exc, OSError):
        return f"unreadable: {exc.strerror or exc}"
    return str(exc)


def index_techniques(
    label_of: Callable[[str], str], namespace: str, directory: str
) -> tuple[dict[str, TechniqueEntry], TechniqueEntry | None]:
    found: list[tuple[int, str, str, bool]] = []
    for current, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel_dir = current[len(directory) :].strip(os.sep).replace(os.sep, "/")
        for name in sorted(names):
            if not name.endswith(".md") or name.startswith(".") or name.upper() == "README.MD":
                continue
            file = os.path.join(current, name)
            if name == "TECHNIQUE.md":
                found.append((1, rel_dir, file, True) if rel_dir else (0, "TECHNIQUE", file, False))
            else:
                found.append((0, f"{rel_dir}/{name[:-3]}" if rel_dir else name[:-3], file, False))
    index: dict[str, TechniqueEntry] = {}
    root_entry: TechniqueEntry | None = None
    for _, path, file, is_group in sorted(found):  # flat files (0) win over group indexes (1)
        label = label_of(file)
        try:
            text: str | None = read_text(file)
            error = None
        except READ_ERRORS as exc:
            text, error = None, f"{label}: {error_text(exc)}"
        entry = TechniqueEntry(
            namespace=namespace,
            path=path,
            file=label,
            is_group=is_group,
            text=text,
            parser=partial(parse_technique, namespace=namespace, path=path, file=label, is_group=is_group),
            error=error,
        )
        if path == "TECHNIQUE" and os.path.dirname(file) == directory:
            root_entry = entry
        else:
            index.setdefault(path, entry)
    return index, root_entry


def index_resources(
    label_of: Callable[[str], str], namespace: str, directory: str
) -> tuple[dict[str, Resource], dict[str, str]]:
    resources: dict[str, Resource] = {}
    names: dict[str, str] = {}
    for name in sorted(os.listdir(directory)):
        file = os.path.join(directory, name)
        if not name.endswith(".md") or name.upper() == "README.MD" or name.startswith(".") or not os.path.isfile(file):
            continue
        stem = name[:-3]
        try:
            resource = parse_resource(read_text(file), namespace=namespace, stem=stem, file=label_of(file))
        except READ_ERRORS:
            continue
        resources[stem] = resource
        if resource.name:
            names.setdefault(resource.name, stem)
    return resources, names
