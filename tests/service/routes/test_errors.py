"""``routes.errors``: an unknown ``/api`` path, a wrong method, a refused request and a bug all answer the
JSON error body (the bug without its exception), in-process."""

from __future__ import annotations

import pytest
from quart_trio import QuartTrio

from orchestrator.service.routes.common import error_response
from orchestrator.service.routes.errors import errors_blueprint

NOT_FOUND = {"ok": False, "error": "not_found"}


def _app() -> QuartTrio:
    app = QuartTrio(__name__)

    @app.get("/api/ok")
    async def ok() -> object:
        return error_response("never", 418)

    @app.get("/api/boom")
    async def boom() -> object:
        raise RuntimeError("secret detail")

    app.register_blueprint(errors_blueprint())
    return app


async def test_unknown_paths_and_wrong_methods_are_not_found() -> None:
    async with _app().test_app() as test_app:
        client = test_app.test_client()
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            response = await client.open("/api/nothing/here", method=method)
            assert (response.status_code, await response.get_json()) == (404, NOT_FOUND), method
        wrong = await client.open("/api/ok", method="DELETE")
        assert (wrong.status_code, await wrong.get_json()) == (404, NOT_FOUND)
        outside = await client.get("/elsewhere")
        assert (outside.status_code, await outside.get_json()) == (404, NOT_FOUND)


async def test_a_bug_answers_internal_error_without_the_exception(capsys: pytest.CaptureFixture[str]) -> None:
    async with _app().test_app() as test_app:
        response = await test_app.test_client().get("/api/boom")
        body = await response.get_data(as_text=True)
    assert response.status_code == 500 and body == '{"ok":false,"error":"internal_error"}'
    printed = capsys.readouterr().err
    assert "RuntimeError" in printed and "/api/boom" in printed and "secret detail" not in printed
