"""Fixtures of the browser tests (documented in ``tests/web/harness.py``).

The whole directory is skipped, with the reason, when Debian's Chromium or the Playwright package is
missing. These tests are plain sync functions (Playwright's sync API runs its own event loop); never put
a trio test in the same module.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.web.harness import (
    CHROMIUM,
    CHROMIUM_ARGS,
    EXPECT_TIMEOUT_MS,
    Shots,
    UiService,
    record_errors,
    start_ui_service,
    unexpected_errors,
)

try:
    from playwright.sync_api import Browser, Page, expect, sync_playwright
except ImportError:  # pragma: no cover - playwright is a dev extra
    sync_playwright = None  # type: ignore[assignment]
else:
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)  # polls are 1 s apart; runs take a few

_SKIP = (
    "playwright is not installed"
    if sync_playwright is None
    else f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    if not CHROMIUM.exists()
    else None
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _SKIP is None:
        return
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.skip(reason=f"browser tests skipped: {_SKIP}"))


@pytest.fixture(scope="module")
def ui_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiService]:
    with start_ui_service(tmp_path_factory.mktemp("ui")) as service:
        yield service


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    assert sync_playwright is not None
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser, ui_service: UiService) -> Iterator[Page]:
    context = browser.new_context(base_url=ui_service.base_url, viewport={"width": 1280, "height": 860})
    context.set_default_timeout(EXPECT_TIMEOUT_MS)
    context.add_cookies([ui_service.auth_cookie()])  # what following the printed ?token= link leaves behind
    page = context.new_page()
    errors = record_errors(page)
    try:
        yield page
    finally:
        context.close()
    unexpected = unexpected_errors(page, errors)
    assert not unexpected, "browser console/page errors:\n" + "\n".join(unexpected)


@pytest.fixture
def shots(tmp_path: Path) -> Shots:
    return Shots(tmp_path)
