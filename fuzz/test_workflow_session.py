"""The session-file decoder fed hostile bytes: SEAL_MISMATCH or success, never another exception or a damaged file."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.workflow.errors import SessionStoreError
from orchestrator.workflow.serverconfig import load_workflow_settings
from orchestrator.workflow.session import (
    SEAL_FILE,
    SESSION_FILE,
    SessionFile,
    SessionStore,
    TraceStore,
    TraceTokenError,
    TriggeredFrom,
    TriggeredWorkflow,
    canonical_bytes,
    new_history,
    new_session_file,
    seal,
)

KEY = bytes(range(32))
_DIR = Path(tempfile.mkdtemp(prefix="fuzz-workflow-session-"))
_SETTINGS = load_workflow_settings(
    {"HOME": str(_DIR), "WORKFLOW_WORKSPACE": str(_DIR / "ws"), "TMPDIR": str(_DIR / "tmp")}, {}, cwd=_DIR
)
STORE = SessionStore(_SETTINGS, KEY, roots=[_DIR / "ws"], durable=False)
FOLDER = _DIR / "ws" / "acc"
SCRATCH = _DIR / "ws" / "round-trip"


def _valid_top() -> SessionFile:
    child = new_session_file(session_index="BBBBBB", workflow_id="wp", workflow_version="1.0.0", now=1.0)
    top = new_session_file(
        session_index="AAAAAA",
        workflow_id="meta",
        workflow_version="1.0.0",
        variables={"n": 1, "f": 0.5, "s": "x", "l": [True, None], "o": {"k": "v"}},
        now=1.0,
    )
    entry = TriggeredWorkflow(
        workflow_id="wp",
        session_index="BBBBBB",
        triggered_at=child.started_at,
        triggered_from=TriggeredFrom(activity_id="a"),
        state=child,
    )
    history = [*top.history, new_history("checkpoint_reached", now=1.0, checkpoint="c", data={"x": [1, 2]})]
    return msgspec.structs.replace(top, triggered_workflows=[entry], history=history)


VALID = canonical_bytes(_valid_top())

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def _put(data: bytes, token: bytes) -> None:
    FOLDER.mkdir(parents=True, exist_ok=True)
    (FOLDER / SESSION_FILE).write_bytes(data)
    (FOLDER / SEAL_FILE).write_bytes(token)


def _read_checked() -> SessionFile | None:
    """Read the folder: success, or SEAL_MISMATCH with the folder left byte-identical and unwritable."""
    before = ((FOLDER / SESSION_FILE).read_bytes(), (FOLDER / SEAL_FILE).read_bytes())
    try:
        state = STORE.read(FOLDER)
    except SessionStoreError as exc:
        assert exc.code == "SEAL_MISMATCH", exc
        assert str(FOLDER) in exc.message
        try:
            STORE.write(FOLDER, _valid_top())
        except SessionStoreError as refused:
            assert refused.code == "SEAL_MISMATCH"
        else:
            raise AssertionError("a mismatched folder was overwritten")
        assert ((FOLDER / SESSION_FILE).read_bytes(), (FOLDER / SEAL_FILE).read_bytes()) == before
        return None
    # whatever decoded must survive a canonical write and read back equal
    for name in (SESSION_FILE, SEAL_FILE):
        (SCRATCH / name).unlink(missing_ok=True)
    STORE.write(SCRATCH, state)
    assert STORE.read(SCRATCH) == state
    return state


@given(st.binary(max_size=600), st.binary(max_size=80))
def test_random_bytes_and_tokens(data: bytes, token: bytes) -> None:
    _put(data, token)
    assert _read_checked() is None


@given(st.binary(max_size=600))
def test_sealed_random_bytes(data: bytes) -> None:
    _put(data, seal(KEY, data).encode())
    _read_checked()


@st.composite
def _mutations(draw: st.DrawFn) -> bytes:
    data = bytearray(VALID)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["flip", "insert", "delete", "replace"]))
        if kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        else:
            data[at : at + 1] = draw(st.sampled_from([b'"', b"{", b"]", b",", b"0", b"-", b"e", b"\\", b"null"]))
    return bytes(data)


@given(_mutations(), st.booleans())
def test_mutated_valid_files(data: bytes, reseal: bool) -> None:
    token = seal(KEY, data if reseal else VALID).encode()
    _put(data, token)
    state = _read_checked()
    if not reseal and data != VALID:
        assert state is None  # the old seal never covers changed bytes


@given(
    st.dictionaries(
        st.sampled_from(["variables", "history", "seq", "status", "triggeredWorkflows", "ts", "extra"]),
        json_values,
        max_size=3,
    )
)
def test_sealed_structural_edits(edits: dict[str, Any]) -> None:
    doc = json.loads(VALID)
    doc.update(edits)
    data = json.dumps(doc).encode()
    _put(data, seal(KEY, data).encode())
    _read_checked()


@given(st.text(max_size=200))
def test_trace_token_decoder_rejects_cleanly(token: str) -> None:
    try:
        TraceStore(KEY).decode_token(token)
    except TraceTokenError:
        pass
