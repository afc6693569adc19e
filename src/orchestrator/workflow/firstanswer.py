"""A fast first answer on stdio: ``initialize`` and ``tools/list`` answered while the server still imports.

Most of ``orchestrator mcp``'s start is importing the official MCP SDK (its protocol types are pydantic
models: about half a second). What an MCP client waits for first — the ``initialize`` answer, then the
tool list — never changes between two starts of the same server on the same settings. So the server
records the SDK's own two answers once (``FirstAnswers``, in ``<install dir>/cache/first-answers.json``)
and, on a later start with the same key, answers them from the record on the raw descriptors while a
worker thread imports the SDK and the tools:

1. the thread imports ``orchestrator.workflow.launch`` (the SDK, the tools, the wires);
2. meanwhile the front reads fd 0: an ``initialize`` asking the recorded protocol version is answered
   from the record (the request is kept, to be replayed), ``notifications/initialized`` is kept,
   ``tools/list`` (first page) and ``ping`` are answered; anything else ends the front;
3. the SDK then serves the wire (``stdio.serve_stdio``), fed first with what the front kept: it answers the
   replayed ``initialize`` itself — that answer is dropped, the client already has the same one — and
   serves everything after.

The key covers everything the two answers depend on: the Python, orchestrator and SDK versions, every
workflow-server source file (size and modification time: the tool table and the instructions are
there) and the server's configured name and version. A start without a matching
record serves as before and records the answers it sends. ``WORKFLOW_SERVER_FAST_START=0`` turns the
front off. This module imports nothing heavy: it runs before the SDK is loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import sys
import threading
from collections.abc import Mapping
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from orchestrator import __version__
from orchestrator.workflow.serverconfig import WorkflowSettings

__all__ = ["FAST_START_ENV", "FirstAnswers", "Recorder", "cache_file", "cache_key", "front", "serve_stdio_fast"]

FAST_START_ENV = "WORKFLOW_SERVER_FAST_START"
_WORKFLOW_DIR = Path(__file__).resolve().parent


def cache_file(settings: WorkflowSettings) -> Path:
    return settings.install_dir / "cache" / "first-answers.json"


def _sdk_marker() -> str:
    """The installed SDK's dist-info names (its version), found without importing it."""
    spec = find_spec("mcp")
    if spec is None or not spec.submodule_search_locations:
        return "no-sdk"
    site = Path(next(iter(spec.submodule_search_locations))).parent
    return ",".join(sorted(p.name for p in site.glob("mcp*.dist-info")))


def cache_key(settings: WorkflowSettings) -> str:
    """A digest of everything the recorded answers depend on (see the module doc)."""
    digest = hashlib.sha256()
    # the two answers name the server and its version; the tools and instructions are the sources' own
    named = f"{settings.server_name}|{settings.server_version}"
    digest.update(f"{sys.version}|{__version__}|{_sdk_marker()}|{named}".encode())
    for path in sorted(_WORKFLOW_DIR.rglob("*.py")):
        stat = path.stat()
        digest.update(f"|{path.relative_to(_WORKFLOW_DIR)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


class FirstAnswers:
    """The recorded ``initialize`` result (for ``protocol`` asked) and ``tools/list`` result."""

    def __init__(self, key: str, protocol: str, initialize: dict[str, Any], tools: dict[str, Any]) -> None:
        self.key, self.protocol, self.initialize, self.tools = key, protocol, initialize, tools

    @classmethod
    def read(cls, path: Path, key: str) -> FirstAnswers | None:
        """The record at ``path`` if it is well formed and has ``key``; ``None`` otherwise (a miss)."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(raw, dict) or raw.get("key") != key:
            return None
        protocol, initialize, tools = raw.get("protocol"), raw.get("initialize"), raw.get("tools")
        if not (isinstance(protocol, str) and isinstance(initialize, dict) and isinstance(tools, dict)):
            return None
        return cls(key, protocol, initialize, tools)

    def write(self, path: Path) -> None:
        from orchestrator.fsutil import atomic_write

        document = {"key": self.key, "protocol": self.protocol, "initialize": self.initialize, "tools": self.tools}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, json.dumps(document).encode(), durable=False)
        except OSError:
            pass  # a cache: an unwritable folder only costs the next start its speed


def _answer(request_id: object, result: Mapping[str, Any]) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n").encode()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Front:
    """What the front kept for the SDK: the lines to replay and the id of the replayed ``initialize``."""

    def __init__(self) -> None:
        self.replay = bytearray()
        self.initialize_id: object = None


def front(answers: FirstAnswers, ready: threading.Event, wake: int, fd_in: int = 0, fd_out: int = 1) -> Front:
    """Answer the first requests from ``answers`` until ``ready`` is set (``wake`` becomes readable then),
    stdin ends, or a request the record cannot answer comes; returns what the SDK must see first."""
    kept = Front()
    pending = bytearray()
    initialized = False
    while not ready.is_set():
        readable, _, _ = select.select([fd_in, wake], [], [])
        if fd_in not in readable:
            break
        chunk = os.read(fd_in, 1 << 16)
        if not chunk:
            break
        pending += chunk
        while (end := pending.find(b"\n")) >= 0:
            line = bytes(pending[: end + 1])
            del pending[: end + 1]
            if not _front_one(line, answers, kept, initialized, fd_out):
                kept.replay += line + pending  # the SDK takes it from here
                return kept
            initialized = kept.initialize_id is not None
    kept.replay += pending
    return kept


def _front_one(line: bytes, answers: FirstAnswers, kept: Front, initialized: bool, fd_out: int) -> bool:
    """Answer or keep one line; ``False`` when the SDK must answer it (and everything after it)."""
    try:
        message = json.loads(line)
    except ValueError:
        return False
    if not isinstance(message, dict):
        return False
    method, params = message.get("method"), message.get("params") or {}
    if not isinstance(params, dict):
        return False
    if method == "initialize" and not initialized and "id" in message:
        if params.get("protocolVersion") != answers.protocol:
            return False
        _write_all(fd_out, _answer(message["id"], answers.initialize))
        kept.replay += line
        kept.initialize_id = message["id"]
        return True
    if method == "notifications/initialized" and initialized:
        kept.replay += line
        return True
    if method == "tools/list" and initialized and "id" in message and not params.get("cursor"):
        _write_all(fd_out, _answer(message["id"], answers.tools))
        return True
    if method == "ping" and "id" in message:
        _write_all(fd_out, _answer(message["id"], {}))
        return True
    return False


class Recorder:
    """Watches the wire until it has seen the SDK's ``initialize`` and first ``tools/list`` answers, then
    records them; also drops the SDK's answer to a replayed ``initialize``. Inspects only the first few
    messages: once both are recorded (or the front answered them) it is a pass-through."""

    def __init__(self, path: Path, key: str, *, drop_id: object = None, record: bool = True) -> None:
        self._path, self._key, self._drop_id = path, key, drop_id
        self._watching = record or drop_id is not None
        self._record = record
        self._protocol: str | None = None
        self._initialize_id: object = None
        self._tools_id: object = None
        self._initialize: dict[str, Any] | None = None

    def incoming(self, line: str) -> None:
        if not self._record:
            return
        try:
            message = json.loads(line)
        except ValueError:
            return
        if not isinstance(message, dict) or "id" not in message:
            return
        params = message.get("params") or {}
        if message.get("method") == "initialize" and self._initialize_id is None and isinstance(params, dict):
            self._initialize_id, self._protocol = message["id"], params.get("protocolVersion")
        elif message.get("method") == "tools/list" and self._tools_id is None and isinstance(params, dict):
            self._tools_id = None if params.get("cursor") else message["id"]

    def outgoing(self, text: str) -> str | None:
        """``text`` to send, or ``None`` to drop it."""
        if not self._watching:
            return text
        try:
            message = json.loads(text)
        except ValueError:
            return text
        if not isinstance(message, dict) or "result" not in message:
            return text
        if self._drop_id is not None and message.get("id") == self._drop_id:
            self._drop_id = None
            self._watching = self._record
            return None
        if self._record and message.get("id") == self._initialize_id and self._initialize is None:
            self._initialize = message["result"]
        elif self._record and message.get("id") == self._tools_id and self._tools_id is not None:
            result = message["result"]
            if self._initialize is not None and isinstance(self._protocol, str) and not result.get("nextCursor"):
                FirstAnswers(self._key, self._protocol, self._initialize, result).write(self._path)
            self._record = False
            self._watching = self._drop_id is not None
        return text


def serve_stdio_fast(settings: WorkflowSettings, env: Mapping[str, str]) -> int:
    """``orchestrator mcp`` on stdio with the front (see the module doc); the exit code of ``serve_main``."""
    key = cache_key(settings)
    path = cache_file(settings)
    answers = FirstAnswers.read(path, key)
    if answers is None:  # a miss: serve as before, recording the two answers
        from orchestrator.workflow.launch import serve_main

        return serve_main(settings, env, hard_exit=True, recorder=Recorder(path, key))
    ready = threading.Event()
    wake_read, wake_write = os.pipe()
    failure: list[BaseException] = []

    def load() -> None:
        try:
            import orchestrator.workflow.launch  # noqa: F401  (the SDK, the tools, the wires)
        except BaseException as exc:  # re-raised on the main thread below
            failure.append(exc)
        finally:
            ready.set()
            os.write(wake_write, b"!")

    loader = threading.Thread(target=load, name="workflow-server-import", daemon=True)
    loader.start()
    kept = front(answers, ready, wake_read)
    loader.join()
    os.close(wake_read)
    os.close(wake_write)
    if failure:
        raise failure[0]
    from orchestrator.workflow.launch import serve_main

    recorder = Recorder(path, key, drop_id=kept.initialize_id, record=kept.initialize_id is None)
    return serve_main(settings, env, hard_exit=True, recorder=recorder, prelude=bytes(kept.replay))
