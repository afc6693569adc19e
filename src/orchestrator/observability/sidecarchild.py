"""One sidecar process seen from the process that started it (``sidecar.SidecarSink``): started, written
to, read from by a thread of its own, and ended.

The process runs ``python -m orchestrator.observability.sidecarproc`` in a session of its own (a Ctrl-C in a
terminal is for the process that started it: the sidecar ends when its input closes). Each frame it sends
back is handed to ``on_frame`` on the reader thread; ``ended`` is set when its output closes (it exited,
whatever the way).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence

import msgspec

from orchestrator.observability.sidecarwire import FromSidecar, Ready, ToSidecar, read_frame, write_frames

__all__ = ["SidecarChild"]


class SidecarChild:
    """A started sidecar process and its reader thread."""

    def __init__(self, on_frame: Callable[[FromSidecar], None]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.observability.sidecarproc"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=dict(os.environ),
            start_new_session=True,
        )
        #: its exporter is set up (``Ready``)
        self.ready = threading.Event()
        #: its output closed: it exited
        self.ended = threading.Event()
        self._on_frame = on_frame
        self._reader = threading.Thread(target=self._read, name="otel-sidecar-read", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def write(self, frames: Sequence[ToSidecar]) -> bool:
        """Write ``frames`` down its input; ``False`` when the pipe is broken (it died)."""
        assert self.process.stdin is not None
        try:
            write_frames(self.process.stdin, frames)
        except (OSError, ValueError):
            return False
        return True

    def close_input(self) -> None:
        """Its end of input: it sends what it holds, reports and exits."""
        try:
            assert self.process.stdin is not None
            self.process.stdin.close()
        except OSError:
            pass

    def end(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for it to exit after its input closed; kill it past that. Whether it
        ended by itself."""
        by_itself = self.ended.wait(seconds)
        if not by_itself:
            self.process.kill()
            self.ended.wait(5)
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None and not pipe.closed:
                try:
                    pipe.close()
                except OSError:
                    pass
        return by_itself

    def _read(self) -> None:
        pipe = self.process.stdout
        assert pipe is not None
        decoder = msgspec.msgpack.Decoder(FromSidecar)
        try:
            while (frame := read_frame(pipe, decoder)) is not None:
                if isinstance(frame, Ready):
                    self.ready.set()
                self._on_frame(frame)
        except (OSError, ValueError, msgspec.DecodeError):  # closed under it by ``end``, or torn
            pass
        finally:
            self.ended.set()
