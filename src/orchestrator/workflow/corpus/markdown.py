"""Pure text parsing of technique and resource markdown.

* ``split_frontmatter`` separates a leading ``---`` YAML block from the body.
* ``parse_technique`` turns a technique file into a ``Technique`` or raises ``TechniqueParseError``
  (the loader records the error and treats the technique as missing).
* ``parse_resource`` reads a resource's frontmatter ``name``/``version`` and strips it from the body.
* ``slice_section`` cuts the section a GitHub-style anchor names out of a markdown body.

Headings inside fenced code blocks never open technique sections, nor match a resource anchor.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from orchestrator.workflow.corpus.model import (
    ProtocolBlock,
    Resource,
    Technique,
    TechniqueInput,
    TechniqueOutput,
    TechniqueParseError,
)
from orchestrator.workflow.corpus.yamlload import NotPlain, load_yaml, plain_scalar

__all__ = [
    "TechniqueParseError",
    "github_slug",
    "parse_resource",
    "parse_technique",
    "rewrite_resource_links",
    "slice_section",
    "split_frontmatter",
]

_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*$")
_ITEM = re.compile(r"^\s*(?:[-*]|\d+\.)\s+(.*)$")
_ORDINAL = re.compile(r"^\d+\.\s*")
_OPTIONAL = re.compile(r"^\*?\(?\s*optional\s*\)?\*?", re.I)
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_ARTIFACT = re.compile(r"^(?:[A-Za-z0-9._-]|\{[A-Za-z0-9._$-]+\})+\.[A-Za-z0-9]+$")
_RESOURCE_LINK = re.compile(
    r"\[([^\]\n]*)\]\((?:\.\.?/)+(?:([A-Za-z0-9_-]+)/)?resources/([A-Za-z0-9_.-]+?)\.md(#[A-Za-z0-9_-]+)?\)"
)
_BANNED_SECTIONS = {"input", "output", "output(s)"}


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """``(frontmatter_yaml_or_None, body)``; a leading BOM is ignored."""
    text = text.removeprefix("\ufeff")
    match = _FRONTMATTER.match(text)
    if match is None:
        return None, text
    return match.group(1), text[match.end() :]


_SIMPLE_LINE = re.compile(r"^( *)([A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]+(.*?))?[ \t]*$")
_PLAIN_UNSAFE = re.compile(r"^[\[\]{}&*!|>%@`'\"#,?:-]|: | #|:$|\t")


def _simple_value(text: str) -> Any:
    if len(text) >= 2 and text[0] == text[-1] == '"' and "\\" not in text and '"' not in text[1:-1]:
        return text[1:-1]
    if len(text) >= 2 and text[0] == text[-1] == "'" and "'" not in text[1:-1]:
        return text[1:-1]
    if _PLAIN_UNSAFE.search(text):
        raise NotPlain(text)
    return plain_scalar(text)


def _simple_mapping(raw: str) -> dict[str, Any] | None:
    """Read flat ``key: scalar`` frontmatter (one level of nesting) without YAML; ``None`` if not that simple."""
    out: dict[str, Any] = {}
    parent: dict[str, Any] | None = None
    parent_key = ""
    child_indent = 0
    try:
        for line in raw.splitlines():
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            match = _SIMPLE_LINE.match(line)
            if match is None:
                return None
            indent, key, value = match.groups()
            if indent:
                if parent is None or not value or (parent and len(indent) != child_indent):
                    return None
                child_indent = len(indent)
                parent[key] = _simple_value(value)
                continue
            if parent is not None and not parent:
                out[parent_key] = None
            if value:
                parent = None
                out[key] = _simple_value(value)
            else:
                parent, parent_key = {}, key
                out[key] = parent
    except NotPlain:
        return None
    if parent is not None and not parent:
        out[parent_key] = None
    return out or None


def _frontmatter_mapping(raw: str | None) -> dict[str, Any] | None:
    """The frontmatter as a mapping; ``None`` when absent or not a mapping; raises on bad YAML."""
    if raw is None:
        return None
    simple = _simple_mapping(raw)
    if simple is not None:
        return simple
    data = load_yaml(raw)
    return data if isinstance(data, dict) else None


def rewrite_resource_links(text: str) -> tuple[str, list[str]]:
    """Rewrite links into ``resources/`` as get_resource ids; also return those ids in order.

    ``(../resources/x.md#s)`` → ``(x#s)``; ``(../../wf2/resources/x.md)`` → ``(wf2/x)``.
    """
    found: list[str] = []

    def sub(match: re.Match[str]) -> str:
        label, workflow, stem, anchor = match.groups()
        target = f"{workflow + '/' if workflow else ''}{stem}{anchor or ''}"
        found.append(target)
        return f"[{label}]({target})"

    return _RESOURCE_LINK.sub(sub, text), found


# --------------------------------------------------------------------------------------------------
# Section splitting
# --------------------------------------------------------------------------------------------------


def _sections(lines: list[str], level: int) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Split at headings of exactly ``level`` outside fences: ``(lead_lines, [(title, body_lines)])``."""
    lead: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    current: list[str] = lead
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            match = _HEADING.match(line)
            if match and len(match.group(1)) == level:
                current = []
                sections.append((match.group(2).strip(), current))
                continue
        current.append(line)
    return lead, sections


def _paragraphs(lines: list[str]) -> str:
    """Blank-line separated paragraphs, each trimmed, joined by one blank line."""
    out: list[str] = []
    buffer: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            buffer.append(line)
        elif buffer:
            out.append("\n".join(buffer).strip())
            buffer = []
    return "\n\n".join(p for p in out if p)


def _steps(lines: list[str]) -> list[str]:
    """List items as steps; continuation lines join; unattached prose paragraphs become steps."""
    if not any(_ITEM.match(line) for line in lines):
        text = _paragraphs(lines)
        return [text] if text else []
    steps: list[list[str]] = []
    current: list[str] | None = None
    blank = False
    in_fence = False
    for line in lines:
        if _FENCE.match(line) or in_fence:
            if _FENCE.match(line):
                in_fence = not in_fence
            if current is None:
                current = []
                steps.append(current)
            current.append("\n" + line)
            blank = False
            continue
        if not line.strip():
            blank = True
            continue
        item = _ITEM.match(line)
        if item:
            current = [item.group(1).strip()]
            steps.append(current)
        elif current is not None and (not blank or line[:1].isspace()):
            current.append(("\n\n" if blank else " ") + line.strip())
        else:
            current = [line.strip()]
            steps.append(current)
        blank = False
    return [text for text in ("".join(parts).strip() for parts in steps) if text]


def _strip_ticks(text: str) -> str:
    return text.strip().strip("`").strip()


def _entry(lines: list[str], reserved: tuple[str, ...]) -> tuple[str | None, dict[str, str], dict[str, str]]:
    lead, subs = _sections(lines, 4)
    description = _paragraphs(lead) or None
    components: dict[str, str] = {}
    special: dict[str, str] = {}
    for title, body in subs:
        value = _paragraphs(body)
        if title.lower() in reserved:
            special[title.lower()] = _strip_ticks(value)
        else:
            components[title] = value
    return description, components, special


def _inputs(lines: list[str]) -> tuple[TechniqueInput, ...]:
    out = []
    for title, body in _sections(lines, 3)[1]:
        description, components, special = _entry(body, ("default",))
        optional = bool(description and _OPTIONAL.match(description))
        out.append(TechniqueInput(title, description, special.get("default"), components or None, optional))
    return tuple(out)


def _outputs(lines: list[str], file: str) -> tuple[TechniqueOutput, ...]:
    out = []
    for title, body in _sections(lines, 3)[1]:
        description, components, special = _entry(body, ("artifact", "audience"))
        artifact = special.get("artifact")
        audience = special.get("audience")
        if artifact is not None and not _ARTIFACT.match(artifact):
            raise TechniqueParseError(
                f"{file}: output '{title}' artifact '{artifact}' is not a single filename with an extension"
            )
        if audience is not None:
            audience = audience.lower()
            if audience not in ("human", "agent"):
                raise TechniqueParseError(f"{file}: output '{title}' audience '{audience}' is not human or agent")
        out.append(TechniqueOutput(title, description, artifact, audience, components or None))
    return tuple(out)


def _protocol(lines: list[str]) -> tuple[ProtocolBlock, ...]:
    lead, blocks = _sections(lines, 3)
    if not blocks:
        steps = _steps(lead)
        return (ProtocolBlock(None, tuple(steps)),) if steps else ()
    out = []
    for title, body in blocks:
        steps = _steps(body)
        if steps:
            out.append(ProtocolBlock(_ORDINAL.sub("", title).strip() or None, tuple(steps)))
    return tuple(out)


def _rules(lines: list[str]) -> dict[str, str]:
    rules: dict[str, str] = {}
    for title, body in _sections(lines, 3)[1]:
        text = _paragraphs(body)
        if text and title not in rules:
            rules[title] = text
    return rules


def parse_technique(text: str, *, namespace: str, path: str, file: str, is_group: bool) -> Technique:
    """Parse one technique file. Raises ``TechniqueParseError`` naming the file and the problem."""
    try:
        frontmatter = _frontmatter_mapping(split_frontmatter(text)[0])
    except (yaml.YAMLError, RecursionError) as exc:
        raise TechniqueParseError(f"{file}: frontmatter is not valid YAML ({exc.__class__.__name__})") from exc
    body = split_frontmatter(text)[1]
    metadata = frontmatter.get("metadata") if frontmatter else None
    version = metadata.get("version") if isinstance(metadata, Mapping) else None
    if not isinstance(version, str) or not _VERSION.match(version.strip()):
        raise TechniqueParseError(f"{file}: frontmatter metadata.version (X.Y.Z) is missing or malformed")
    rewritten, links = rewrite_resource_links(body)
    _, sections = _sections(rewritten.splitlines(), 2)
    by_title: dict[str, list[str]] = {}
    for title, lines in sections:
        key = title.lower()
        if key in _BANNED_SECTIONS:
            raise TechniqueParseError(f"{file}: section '## {title}' is not canonical; use '## Inputs'/'## Outputs'")
        by_title.setdefault(key, lines)
    capability = _paragraphs(by_title.get("capability", []))
    if "capability" not in by_title:
        raise TechniqueParseError(f"{file}: missing '## Capability' section")
    if not capability:
        raise TechniqueParseError(f"{file}: empty '## Capability' section")
    return Technique(
        namespace=namespace,
        path=path,
        file=file,
        version=version.strip(),
        capability=capability,
        inputs=_inputs(by_title.get("inputs", [])),
        outputs=_outputs(by_title.get("outputs", []), file),
        protocol=_protocol(by_title.get("protocol", [])),
        rules=_rules(by_title.get("rules", [])),
        resource_links=tuple(dict.fromkeys(links)),
        is_group=is_group,
    )


# --------------------------------------------------------------------------------------------------
# Resources
# --------------------------------------------------------------------------------------------------


def _scalar_text(value: Any) -> str | None:
    if value is None or isinstance(value, dict | list):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_resource(text: str, *, namespace: str, stem: str, file: str) -> Resource:
    """A resource record: frontmatter ``name``, ``version`` (top-level, else ``metadata.version``), body.

    Unreadable frontmatter is still stripped; it then contributes no name or version.
    """
    raw, body = split_frontmatter(text)
    try:
        frontmatter = _frontmatter_mapping(raw) or {}
    except (yaml.YAMLError, RecursionError):
        frontmatter = {}
    name = frontmatter.get("name")
    version = _scalar_text(frontmatter.get("version"))
    metadata = frontmatter.get("metadata")
    if version is None and isinstance(metadata, Mapping):
        version = _scalar_text(metadata.get("version"))
    return Resource(
        namespace=namespace,
        stem=stem,
        file=file,
        name=name if isinstance(name, str) and name else None,
        version=version,
        body=body.strip(),
    )


def github_slug(heading: str) -> str:
    """GitHub-style anchor: lowercase, drop characters other than word/space/hyphen, spaces → ``-``."""
    lowered = heading.strip().lower()
    kept = re.sub(r"[^A-Za-z0-9_\s-]", "", lowered)
    return re.sub(r"\s+", "-", kept)


def slice_section(body: str, anchor: str) -> str | None:
    """The section an anchor names, or ``None``.

    The first heading outside a fence whose slug equals the anchor opens the section; it runs through
    the line before the next heading of the same or higher level. That closing heading is taken as
    written, even inside a fence: a fenced template heading marks where the section's prose stops
    (so ``review-mode#review-comment-template`` ends where its ``## PR Review`` skeleton begins).
    """
    wanted = anchor.strip().lower()
    lines = body.splitlines()
    start = -1
    level = 0
    in_fence = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        match = _HEADING.match(line)
        if match and github_slug(match.group(2)) == wanted:
            start, level = index, len(match.group(1))
            break
    if start < 0:
        return None
    end = len(lines)
    for index in range(start + 1, len(lines)):
        match = _HEADING.match(lines[index])
        if match and len(match.group(1)) <= level:
            end = index
            break
    return "\n".join(lines[start:end]).strip()
