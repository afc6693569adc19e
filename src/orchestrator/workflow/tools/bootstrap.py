"""One-call bootstrap decisions for a fresh durable ``meta`` start. Pure.

``resume_phrases(lexicon_text)`` reads the affirmative phrases of ``meta/resources/resume-intent-lexicon.md``
(bullet items, or backticked items in table rows, of the sections before any "not"/"negative" heading);
``states_resume_intent`` matches them case-insensitively as whole words. ``match_client`` picks the client
workflow: the pinned ``target_workflow_id``, else the only catalog id named as a whole word, else a unique
top tag/title-word score (margin ≥ 1); anything else is a ``decision``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

from orchestrator.workflow.corpus.model import Workflow

__all__ = ["RETRY_WITH", "ClientMatch", "match_client", "resume_phrases", "states_resume_intent"]

RETRY_WITH = ["user_request", "target_workflow_id", "planning_folder", "fresh"]
_WORD = re.compile(r"[a-z0-9]+")
_BACKTICKED = re.compile(r"`([^`]+)`")
_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "to",
        "of",
        "and",
        "or",
        "in",
        "on",
        "for",
        "with",
        "from",
        "is",
        "be",
        "we",
        "our",
        "this",
        "that",
        "it",
        "as",
        "by",
        "at",
        "are",
        "was",
        "so",
        "if",
        "not",
        "no",
        "also",
        "my",
        "me",
        "i",
        "you",
        "please",
        "can",
        "could",
        "would",
        "should",
        "want",
        "need",
        "let",
        "lets",
        "do",
        "does",
        "new",
        "some",
        "any",
        "workflow",
        "workflows",
    }
)


def resume_phrases(text: str) -> list[str]:
    """The affirmative resume phrases listed in the lexicon resource text."""
    phrases: list[str] = []
    title = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("## "):
            title = stripped[3:].strip().lower()
            continue
        words = set(_WORD.findall(title))
        if (
            not title
            or words & {"not", "negative", "negatives", "matching"}
            or not words
            & {
                "phrase",
                "phrases",
                "affirmative",
                "vocabulary",
            }
        ):
            continue
        if stripped.startswith("|"):
            phrases.extend(item.strip() for item in _BACKTICKED.findall(stripped))
        elif stripped.startswith(("- ", "* ")):
            item = stripped[2:].strip()
            found = _BACKTICKED.findall(item)
            phrases.extend(p.strip() for p in found) if found else phrases.append(item.strip("`").strip())
    return [p for p in dict.fromkeys(p.lower() for p in phrases) if p]


def states_resume_intent(user_request: str | None, phrases: Sequence[str]) -> bool:
    """Whether the request contains one of ``phrases`` as whole words (any run of spaces between words)."""
    if not user_request or not user_request.strip():
        return False
    for phrase in phrases:
        body = r"\s+".join(re.escape(part) for part in phrase.split())
        if re.search(rf"(?<![A-Za-z0-9_]){body}(?![A-Za-z0-9_])", user_request, flags=re.IGNORECASE):
            return True
    return False


class ClientMatch(msgspec.Struct, frozen=True, kw_only=True):
    """``workflow_id`` when one client was resolved, else a ``decision`` payload."""

    workflow_id: str | None = None
    decision: dict[str, Any] | None = None


def _tokens(text: str) -> set[str]:
    return {t for t in _WORD.findall(text.lower()) if len(t) > 1 and t not in _STOPWORDS}


def _hit(token: str, words: set[str]) -> bool:
    if token in words:
        return True
    return len(token) >= 4 and any(len(w) >= 4 and (w.startswith(token) or token.startswith(w)) for w in words)


def _score(request_tokens: set[str], wf: Workflow) -> int:
    words: set[str] = set()
    for tag in wf.tags:
        words |= set(_WORD.findall(tag.lower()))
    words |= _tokens(wf.title)
    words |= set(_WORD.findall(wf.id.lower()))
    return sum(1 for token in request_tokens if _hit(token, words))


def _candidate(wf: Workflow, score: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": wf.id, "title": wf.title}
    if score is not None:
        out["score"] = score
    return out


def _decision(kind: str, candidates: list[dict[str, Any]], recommendation: str) -> ClientMatch:
    return ClientMatch(
        decision={
            "kind": kind,
            "candidates": candidates,
            "recommendation": recommendation,
            "retry_with": list(RETRY_WITH),
        }
    )


def match_client(user_request: str | None, catalog: Sequence[Workflow], target: str | None = None) -> ClientMatch:
    """Resolve the one client workflow for a bootstrap start, or explain why not (see module docstring)."""
    by_id = {wf.id: wf for wf in catalog}
    if target:
        if target in by_id:
            return ClientMatch(workflow_id=target)
        return _decision(
            "workflow_unmatched",
            [_candidate(wf) for wf in catalog],
            f"target_workflow_id '{target}' is not a listed workflow; retry with one of the candidate ids",
        )
    text = user_request or ""
    named = [
        wf
        for wf in catalog
        if re.search(rf"(?<![A-Za-z0-9_-]){re.escape(wf.id)}(?![A-Za-z0-9_-])", text, flags=re.IGNORECASE)
    ]
    if len(named) == 1:
        return ClientMatch(workflow_id=named[0].id)
    if len(named) > 1:
        return _decision(
            "workflow_ambiguous",
            [_candidate(wf) for wf in named],
            "the request names several workflows; retry with target_workflow_id set to the one to run",
        )
    tokens = _tokens(text)
    ranked = sorted(((_score(tokens, wf), wf) for wf in catalog), key=lambda pair: (-pair[0], pair[1].id))
    scored = [(score, wf) for score, wf in ranked if score > 0]
    if not scored:
        return _decision(
            "workflow_unmatched",
            [_candidate(wf) for wf in catalog],
            "no workflow matches the request; retry with target_workflow_id or a more specific user_request",
        )
    if len(scored) == 1 or scored[0][0] - scored[1][0] >= 1:
        return ClientMatch(workflow_id=scored[0][1].id)
    top = scored[0][0]
    return _decision(
        "workflow_ambiguous",
        [_candidate(wf, score) for score, wf in scored],
        f"several workflows fit equally well (top: {', '.join(wf.id for s, wf in scored if s == top)}); "
        "retry with target_workflow_id",
    )
