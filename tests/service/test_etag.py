"""ETag digests and If-None-Match matching."""

from __future__ import annotations

from orchestrator.service.etag import etag_of, matches


def test_the_tag_follows_the_body() -> None:
    assert etag_of(b"a") == etag_of(b"a") != etag_of(b"b")
    assert etag_of(b"a").startswith('"') and etag_of(b"a").endswith('"')


def test_if_none_match() -> None:
    tag = etag_of(b"body")
    assert matches(tag, tag)
    assert matches(f'"x", W/{tag}', tag)
    assert matches("*", tag)
    assert not matches(None, tag) and not matches("", tag) and not matches('"x"', tag)
