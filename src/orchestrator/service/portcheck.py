"""A port ``serve`` cannot bind: found before anything else starts, said in one line with who holds it.

:func:`bind_failure` tries the bind itself (``SO_REUSEADDR``, as Hypercorn binds) and closes at once, so a
taken port is reported before the configuration is loaded and the model probed. :func:`holders` names the
processes listening on the port from ``/proc/net/tcp{,6}`` (the socket's inode) and ``/proc/<pid>/fd``
(which process has that inode open) — on Linux, for processes this user may inspect; elsewhere it finds
nothing. :func:`is_orchestrator` asks the port's ``/healthz``, which every ``orchestrator serve`` (and
its configuration error page) answers with ``{"ok": …}``. :func:`busy_message` is the line.
"""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

import httpx
import msgspec
import trio

__all__ = ["BIND_ERRNOS", "Holder", "bind_failure", "busy_message", "first_bind_error", "holders", "is_orchestrator"]

#: The ``OSError`` numbers that mean "this address cannot be bound" (taken, not ours, not permitted).
BIND_ERRNOS = frozenset({errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.EACCES})
_LISTEN = "0A"


class Holder(msgspec.Struct, frozen=True):
    """A process listening on the port: its pid and command line (spaces between the arguments)."""

    pid: int
    command: str


def bind_failure(host: str, port: int) -> OSError | None:
    """The error binding ``host:port`` raises now, or ``None`` when it binds (or ``host`` does not resolve:
    the server's own bind reports that). Port 0 always binds."""
    if port == 0:
        return None
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError, OSError):
        return None
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                return exc
    return None


def first_bind_error(error: BaseException) -> OSError | None:
    """The bind ``OSError`` inside ``error`` (Hypercorn raises it from nested nurseries), if there is one."""
    if isinstance(error, OSError):
        return error if error.errno in BIND_ERRNOS else None
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = first_bind_error(inner)
            if found is not None:
                return found
    return None


def _listening_inodes(port: int, proc: Path) -> set[str]:
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes - {"0"}


def holders(port: int, proc: Path = Path("/proc")) -> list[Holder]:
    """The processes listening on TCP ``port`` that this user can see (empty when none, or not Linux)."""
    inodes = _listening_inodes(port, proc)
    if not inodes:
        return []
    wanted = {f"socket:[{inode}]" for inode in inodes}
    found: list[Holder] = []
    try:
        pids = [entry for entry in os.listdir(proc) if entry.isdigit()]
    except OSError:
        return []
    for pid in sorted(pids, key=int):
        try:
            fds = os.listdir(proc / pid / "fd")
            if not any(os.readlink(proc / pid / "fd" / fd) in wanted for fd in fds):
                continue
            raw = (proc / pid / "cmdline").read_bytes()
        except OSError:  # gone meanwhile, or not ours to inspect
            continue
        command = " ".join(raw.decode(errors="replace").replace("\0", " ").split())
        found.append(Holder(pid=int(pid), command=command))
    return found


async def is_orchestrator(host: str, port: int, *, seconds: float = 1.0) -> bool:
    """Whether ``host:port`` answers ``GET /healthz`` as an orchestrator service does (``{"ok": …}``)."""
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else "::1" if host == "::" else host
    authority = f"[{shown}]" if ":" in shown else shown
    with trio.move_on_after(seconds):
        try:
            async with httpx.AsyncClient(timeout=seconds) as client:
                response = await client.get(f"http://{authority}:{port}/healthz")
            document = msgspec.json.decode(response.content)
        except (httpx.HTTPError, httpx.InvalidURL, msgspec.DecodeError):
            return False
        return isinstance(document, dict) and isinstance(document.get("ok"), bool)
    return False


def busy_message(host: str, port: int, error: OSError, found: list[Holder], orchestrator: bool) -> str:
    """One line: which address, why, who holds it when known, and what to do."""
    where = f"{host}:{port}"
    if error.errno != errno.EADDRINUSE:
        return f"cannot listen on {where}: {error.strerror or error}; pick another address with --host or --port"
    who = " by another `orchestrator serve` (or demo)" if orchestrator else ""
    if found:
        who += " (" + ", ".join(f"pid {h.pid}: {_short(h.command)}" for h in found[:3]) + ")"
    return (
        f"port {port} on {host} is already in use{who}; stop it, or pick another port with --port N "
        "(--port 0 takes any free one)"
    )


def _short(command: str, limit: int = 80) -> str:
    return command if len(command) <= limit else command[: limit - 1] + "…"
