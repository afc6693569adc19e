"""The wordcount command: count the words of a text file."""

from __future__ import annotations

import argparse
from pathlib import Path


def count_words(text: str) -> int:
    return len(text.split())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="wordcount", description="Count the words of a text file.")
    parser.add_argument("path", help="the file to count")
    args = parser.parse_args(argv)
    text = Path(args.path).read_text(encoding="utf-8")
    print(f"words: {count_words(text)}")
    return 0
