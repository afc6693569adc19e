"""The human backend: who answers ``ask_human``.

The engine only needs ``await backend.ask(id, question, context) -> answer``; the asking role waits
(its scope stays cancellable: a plan modification or shutdown stops the wait). Backends here serve
``orchestrator run``: answers from a file of question → answer pairs, or from the terminal. The
service provides its own (pending questions answered over HTTP).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

import msgspec
import trio

from orchestrator.errors import ConfigError

__all__ = ["AnswersFile", "HumanBackend", "Terminal", "load_answers", "normalize_question"]


class HumanBackend(Protocol):
    async def ask(self, question_id: str, question: str, context: str | None) -> str: ...


def normalize_question(text: str) -> str:
    """Near-exact matching: case, surrounding whitespace and runs of spaces do not matter."""
    return " ".join(text.split()).casefold()


def load_answers(path: Path) -> dict[str, str]:
    """``{question: answer}`` from a JSON file; ``ConfigError`` naming the file when it is not that."""
    try:
        value = msgspec.json.decode(path.read_bytes(), type=dict[str, str])
    except (OSError, msgspec.DecodeError) as exc:
        raise ConfigError(f"--answers {path}: expected a JSON object of question → answer strings ({exc})") from None
    return value


class AnswersFile:
    """Answers from a mapping; a question with no near-exact match gets ``fallback``."""

    def __init__(
        self, answers: Mapping[str, str], fallback: str = "No answer is available; use your judgement."
    ) -> None:
        self._answers = {normalize_question(q): a for q, a in answers.items()}
        self._fallback = fallback

    async def ask(self, question_id: str, question: str, context: str | None) -> str:
        return self._answers.get(normalize_question(question), self._fallback)


class Terminal:
    """Asks on stderr and reads one line from stdin (in a worker thread, abandoned on cancellation)."""

    async def ask(self, question_id: str, question: str, context: str | None) -> str:
        print(f"\n? {question}", file=sys.stderr)
        if context:
            print(f"  ({context})", file=sys.stderr)
        print("> ", end="", file=sys.stderr, flush=True)
        line = await trio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        return line.rstrip("\n") or "(no answer)"
