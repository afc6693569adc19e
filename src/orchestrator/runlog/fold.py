"""Reconstruct a turn's full request from the ``llm_call`` delta protocol (pure, no I/O).

Each ``llm_call`` carries only the messages its request added since the same role instance's previous
``llm_call`` (``sent``, starting at conversation index ``sentFrom``); ``messageCount`` is the full
request's size. A full snapshot is ``sentFrom == 0`` (or absent) with ``len(sent) == messageCount``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.vocabulary import LLM_CALL

__all__ = ["fold_request", "instance_key"]


def instance_key(payload: Mapping[str, Any]) -> str:
    """The identity turns are grouped by: the role-instance id, else the role name (old logs)."""
    return str(payload.get("roleId") or payload.get("role") or "")


def fold_request(events: Sequence[Mapping[str, Any]], index: int) -> list[Any] | None:
    """Return the full message list the model saw at the ``llm_call`` at ``events[index]``.

    ``events`` are log records as dicts (``{"type", "payload", ...}``). Walks backward folding the
    deltas of the same instance: track the still-uncovered start (initially the event's ``sentFrom``);
    each earlier same-instance ``llm_call`` contributes ``sent[0 : uncovered - its sentFrom]`` and lowers
    the uncovered start to its ``sentFrom``. Returns ``None`` when the event is not an ``llm_call`` or
    carries no ``sent`` body (the ``standard`` logging level); a log missing early deltas yields the
    covered suffix only.
    """
    event = events[index]
    if event.get("type") != LLM_CALL:
        return None
    payload = event.get("payload") or {}
    sent = payload.get("sent")
    if sent is None:
        return None
    key = instance_key(payload)
    uncovered = int(payload.get("sentFrom") or 0)
    pieces: list[list[Any]] = [list(sent)]
    i = index - 1
    while uncovered > 0 and i >= 0:
        earlier = events[i]
        i -= 1
        if earlier.get("type") != LLM_CALL:
            continue
        earlier_payload = earlier.get("payload") or {}
        if instance_key(earlier_payload) != key:
            continue
        earlier_sent = earlier_payload.get("sent")
        if earlier_sent is None:
            break
        start = int(earlier_payload.get("sentFrom") or 0)
        take = max(0, uncovered - start)
        pieces.append(list(earlier_sent[:take]))
        uncovered = min(uncovered, start)
    full: list[Any] = []
    for piece in reversed(pieces):
        full.extend(piece)
    return full
