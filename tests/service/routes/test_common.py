"""``routes.common``: the optional-choice rule, the run-folder check, the conditional JSON answer and the
body reader (which redacts secrets on arrival)."""

from __future__ import annotations

from pathlib import Path

from quart_trio import QuartTrio

from orchestrator.config.redaction import Redactor
from orchestrator.service.routes.common import RunFolders, conditional_json, optional_choice, read_body


def test_optional_choice() -> None:
    allowed = ("full", "standard")
    assert optional_choice({}, "logLevel", allowed) == (True, None)
    assert optional_choice({"logLevel": None}, "logLevel", allowed) == (True, None)
    assert optional_choice({"logLevel": "full"}, "logLevel", allowed) == (True, "full")
    assert optional_choice({"logLevel": "debug"}, "logLevel", allowed) == (False, "debug")
    assert optional_choice({"logLevel": 3}, "logLevel", allowed) == (False, None)


def test_a_known_run_is_a_plain_folder_with_a_meta_or_a_log(tmp_path: Path) -> None:
    folders = RunFolders(tmp_path)
    (tmp_path / "run-a").mkdir()
    (tmp_path / "run-a" / "meta.json").write_text("{}")
    (tmp_path / "run-b").mkdir()
    (tmp_path / "run-b" / "log.jsonl").write_text("")
    (tmp_path / "run-c").mkdir()
    assert folders.known("run-a") and folders.known("run-b")
    assert not folders.known("run-c") and not folders.known("") and not folders.known("run-a/meta.json")
    assert folders.folder("run-a") == tmp_path / "run-a"


async def test_conditional_json_and_the_body_reader() -> None:
    app = QuartTrio(__name__)

    @app.route("/echo", methods=["POST"])
    async def echo() -> object:
        body = await read_body()
        return conditional_json({"body": body})

    async with app.test_app() as test_app:
        client = test_app.test_client()
        first = await client.post("/echo", json={"a": 1})
        tag = first.headers["etag"]
        assert (first.status_code, await first.get_json()) == (200, {"body": {"a": 1}})
        again = await client.post("/echo", json={"a": 1}, headers={"if-none-match": tag})
        assert (again.status_code, await again.get_data()) == (304, b"")
        for raw in (b"[1]", b"{not json", b""):
            reply = await client.post("/echo", data=raw, headers={"content-type": "application/json"})
            assert await reply.get_json() == {"body": None}, raw


async def test_the_body_reader_redacts_every_string_on_arrival() -> None:
    """A secret typed into a task, an answer or a message never gets past the route that reads it."""
    app = QuartTrio(__name__)
    redactor = Redactor(["pa55w0rd-xyz-01"])

    @app.route("/echo", methods=["POST"])
    async def echo() -> object:
        return conditional_json({"body": await read_body(redactor)})

    token = "ghp_" + "Zx9Yw8Vu7T" * 4
    body = {"task": f"use pa55w0rd-xyz-01 and {token}", "nested": [{"pa55w0rd-xyz-01": 1}], "n": 2}
    async with app.test_app() as test_app:
        reply = await test_app.test_client().post("/echo", json=body)
        assert await reply.get_json() == {
            "body": {"task": "use <redacted> and <redacted>", "nested": [{"<redacted>": 1}], "n": 2}
        }
