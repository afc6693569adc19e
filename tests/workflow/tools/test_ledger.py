"""``tools/ledger.py``: content hashes, delivery modes, ledger keys and the unchanged-marker collapse."""

from __future__ import annotations

import hashlib

import pytest

from orchestrator.workflow.session.sessionfile import new_session_file
from orchestrator.workflow.tools import ledger as lg


def test_content_hash_is_16_hex_of_sha256() -> None:
    assert lg.content_hash("abc") == hashlib.sha256(b"abc").hexdigest()[:16]
    assert lg.block_hash({"a": [1, 2]}) == lg.block_hash({"a": [1, 2]})
    assert lg.block_hash({"a": 1, "b": 2}) != lg.block_hash({"b": 2, "a": 1})  # key order is content


@pytest.mark.parametrize(
    ("context_mode", "bundle", "full", "fetch", "activity"),
    [
        (None, None, None, "full", "full"),
        ("fresh", "reference", None, "reference", "reference"),
        ("persistent", None, None, "reference", "reference"),
        ("persistent", "full", None, "full", "full"),
        ("persistent", None, True, "full", "reference"),
        ("persistent", "reference", True, "full", "reference"),
    ],
)
def test_delivery_modes(
    context_mode: str | None, bundle: str | None, full: bool | None, fetch: str, activity: str
) -> None:
    state = new_session_file(
        session_index="AAAAAA", workflow_id="wf", workflow_version="1.0.0", context_mode=context_mode
    )
    assert lg.fetch_mode(state, bundle, full) == fetch
    assert lg.activity_mode(state, bundle) == activity


def test_scope_and_keys() -> None:
    state = new_session_file(session_index="AAAAAA", workflow_id="wf", workflow_version="1.0.0", agent_id="orch")
    assert lg.delivery_scope(state, None) == "orch"
    assert lg.delivery_scope(state, "w1") == "w1"
    assert lg.technique_key("g::op") == "technique:g::op"
    assert lg.bundle_key("wf/g") == "bundle:wf/g"
    assert lg.bundle_rules_key("h") == "bundle:rules:h"
    assert lg.activity_rules_key("h") == "activity_rules:h"
    assert lg.contract_key("meta::g", "h") == "contract:meta::g:h"
    assert lg.provenance_note_key("h") == "technique:provenance_note:h"
    assert lg.resource_key("x#sec") == "resource:x#sec"
    assert lg.workflow_bundle_key("h") == "workflow_bundle:h"


def test_merge_ledger_never_mutates() -> None:
    before = {"w1": {"a": "1"}}
    after = lg.merge_ledger(before, "w1", {"b": "2"})
    assert before == {"w1": {"a": "1"}}
    assert after == {"w1": {"a": "1", "b": "2"}}
    assert lg.merge_ledger(None, "w2", {"c": "3"}) == {"w2": {"c": "3"}}
    assert lg.merge_ledger(None, "w2", {}) is None


def test_collapse_ledger_then_in_response_then_full() -> None:
    view = lg.LedgerView({"w1": {"k1": "h1"}}, "w1")
    seen = lg.InResponse()
    assert lg.collapse("body", "k1", "h1", ledger=view, consult=True, seen=seen, where="x") == lg.unchanged_marker("h1")
    assert view.staged == {}
    # not consulted: content again (and staged, since it is delivered)
    assert lg.collapse("body", "k1", "h1", ledger=view, consult=False, seen=seen, where="first") == "body"
    assert view.staged == {"k1": "h1"}
    # a second copy in the same response points at the first, in every mode
    second = lg.collapse("body", "k1", "h1", ledger=view, consult=False, seen=seen, where="second")
    assert second == {"delivery": "unchanged", "content_hash": "h1", "see": "first"}
    assert lg.is_marker(second) and not lg.is_marker("body")
    # a changed body under the same key is content
    assert lg.collapse("new", "k1", "h2", ledger=view, consult=True, seen=seen, where="y") == "new"


def test_collapse_technique_blocks() -> None:
    contract = {"inputs": [{"id": "a"}]}
    payload = {"id": "t", "capability": "c", "provenance_note": "note", "contracts": {"wf": contract}}
    view = lg.LedgerView(None, "w1")
    seen = lg.InResponse()
    first = lg.collapse_technique(payload, ledger=view, consult=True, seen=seen, where="s1")
    assert first == payload
    second = lg.collapse_technique({**payload, "id": "u"}, ledger=view, consult=True, seen=seen, where="s2")
    assert second["contracts"]["wf"]["see"] == "s1.contracts.wf"
    assert second["provenance_note"]["see"] == "s1.provenance_note"
    digest = lg.block_hash(contract)
    assert view.staged[lg.contract_key("wf", digest)] == digest
    assert view.staged[lg.provenance_note_key(lg.content_hash("note"))] == lg.content_hash("note")
    # held from an earlier call and consulted: a plain marker
    held = lg.LedgerView({"w1": dict(view.staged)}, "w1")
    again = lg.collapse_technique(payload, ledger=held, consult=True, seen=lg.InResponse(), where="s")
    assert again["contracts"]["wf"] == {"delivery": "unchanged", "content_hash": digest}
