"""The perimeter's header parsers fed arbitrary header values: a verdict, never a crash, and never a
foreign name or origin let through."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.service.perimeter_rules import (
    Policy,
    content_type_allowed,
    cookie_name,
    host_allowed,
    origin_allowed,
    security_headers,
    split_host,
)

POLICY = Policy(token="t", bind_host="0.0.0.0")
# latin-1 text: what a header value decodes to
headers = st.text(alphabet=st.characters(max_codepoint=255), max_size=80)
names = st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,20}){1,3}", fullmatch=True)


@given(headers, headers, st.sampled_from(["http", "https", "ws", "wss"]), st.sampled_from(["GET", "POST", "PATCH"]))
def test_header_parsers_never_raise(host: str, origin: str, scheme: str, method: str) -> None:
    split_host(host)
    host_allowed(host, POLICY)
    origin_allowed(origin, scheme, host, POLICY)
    cookie_name(host, scheme)
    content_type_allowed(method, origin, True)
    for name, value in security_headers(host):
        value.decode("latin-1")
        assert b"\r" not in value and b"\n" not in value, name


@given(names.filter(lambda n: not n.endswith(".localhost")), st.integers(1, 65535))
def test_a_foreign_name_never_passes(name: str, port: int) -> None:
    assert not host_allowed(f"{name}:{port}", POLICY)
    assert not origin_allowed(f"http://{name}:{port}", "http", f"127.0.0.1:{port}", POLICY)
    assert origin_allowed(f"http://{name}:{port}", "http", f"{name}:{port}", POLICY)  # its own origin
