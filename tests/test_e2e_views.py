"""examples/smorest_app.py under gunicorn, driven by the official ``mcp`` client."""

from __future__ import annotations

import typing as t

import anyio
import httpx
import pytest
from harness import free_port
from harness import start_server
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

pytest.importorskip("flask_smorest")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),  # handshake-era calls in mcp 2.3
]

TOKEN = "e2e-admin-token"


@pytest.fixture(params=["gevent", "gthread"], scope="module")
def pets(request: pytest.FixtureRequest) -> t.Iterator[t.Any]:
    env = {"PETS_ADMIN_TOKEN": TOKEN}
    with start_server("examples.smorest_app:app", request.param, env=env) as server:
        yield server


def session(url: str, token: str | None = None) -> t.Any:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return streamable_http_client(url, http_client=httpx.AsyncClient(headers=headers))


def test_views_as_tools_through_the_official_client(pets: t.Any) -> None:
    async def main() -> None:
        async with session(pets.url) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = {tool.name: tool for tool in (await s.list_tools()).tools}
            assert sorted(tools) == [
                "health",
                "pets_pets_get",
                "pets_pets_post",
                "pets_petsbyid_delete",
                "pets_petsbyid_get",
                "pets_photo",
            ]
            by_id = tools["pets_petsbyid_get"]
            assert by_id.input_schema["properties"]["pet_id"]["type"] == "integer"
            assert by_id.input_schema["required"] == ["pet_id"]
            assert by_id.annotations is not None and by_id.annotations.read_only_hint is True
            delete = tools["pets_petsbyid_delete"].annotations
            assert delete is not None and delete.destructive_hint is True
            body = tools["pets_pets_post"].input_schema["properties"]["body"]
            assert body["properties"]["species"]["enum"] == ["dog", "cat", "bird"]
            query = tools["pets_pets_get"].input_schema["properties"]
            assert query["limit"]["maximum"] == 100
            assert tools["health"].input_schema["properties"]["probe"]["enum"] == ["live", "ready"]

            listed = await s.call_tool("pets_pets_get", {"species": "cat"})
            assert not listed.is_error
            assert listed.structured_content == {
                "result": [{"id": 2, "name": "Tom", "species": "cat"}]
            }
            made = await s.call_tool(
                "pets_pets_post", {"body": {"name": "Kiki", "species": "bird"}}
            )
            assert not made.is_error and made.structured_content is not None
            new_id = made.structured_content["id"]
            photo = await s.call_tool("pets_photo", {"pet_id": new_id})
            assert photo.content[0].type == "image"
            assert (await s.call_tool("health", {"probe": "ready"})).structured_content == {
                "ok": True,
                "probe": "ready",
            }

            missing = await s.call_tool("pets_petsbyid_get", {"pet_id": 999})
            assert missing.is_error and missing.structured_content is not None
            assert missing.structured_content["code"] == 404
            taken = await s.call_tool("pets_pets_post", {"body": {"name": "rex", "species": "dog"}})
            assert taken.is_error and taken.structured_content is not None
            assert taken.structured_content["code"] == 422
            assert "already exists" in taken.content[0].text  # type: ignore[union-attr]
            bad = await s.call_tool("pets_pets_get", {"limit": 0})  # refused by the schema
            assert bad.is_error

            refused = await s.call_tool("pets_petsbyid_delete", {"pet_id": new_id})
            assert refused.is_error and refused.structured_content is not None
            assert refused.structured_content["code"] == 401

        async with session(pets.url, "wrong") as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            refused = await s.call_tool("pets_petsbyid_delete", {"pet_id": new_id})
            assert refused.is_error and refused.structured_content is not None
            assert refused.structured_content["code"] == 403

        async with session(pets.url, TOKEN) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            deleted = await s.call_tool("pets_petsbyid_delete", {"pet_id": new_id})
            assert not deleted.is_error
            gone = await s.call_tool("pets_petsbyid_get", {"pet_id": new_id})
            assert gone.is_error

    anyio.run(main)


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> t.Iterator[t.Any]:
    env = {"LOGIN_APP_DB": str(tmp_path_factory.mktemp("shop") / "shop.db")}
    with start_server("tests._apps.login_app:app", "gevent", env=env) as server:
        yield server


def connect(url: str, headers: dict[str, str] | None = None) -> t.Any:
    return streamable_http_client(url, http_client=httpx.AsyncClient(headers=headers))


def test_login_protected_views_through_the_official_client(shop: t.Any) -> None:
    """A Flask-Login app on gunicorn: no login gets "needs a login", not the login page as
    a success; a bearer login and a session login (Flask's cookie) reach the user's orders;
    a logged-in user without the permission gets a 403 the model can read (issue 32). A
    resource, template and prompt behind ``login_required`` refuse without a login with a
    JSON-RPC error that says so (not "cannot be sent"), and answer with the cookie."""
    login = httpx.post(f"{shop.base_url}/login", data={"user": "bob"})
    assert login.status_code == 200
    cookie = "; ".join(f"{name}={value}" for name, value in login.cookies.items())

    async def main() -> None:
        async with connect(shop.url) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            names = sorted(tool.name for tool in (await s.list_tools()).tools)
            assert names == ["admin_report", "orders"]  # only what add_routes selected
            anonymous = await s.call_tool("orders", {})
            assert anonymous.is_error
            text = anonymous.content[0].text  # type: ignore[union-attr]
            assert text.startswith("The view redirected to /login?next=")
            assert "this tool needs a login" in text and "Sign in" not in text
            for ask in (
                lambda: s.read_resource("shop://orders/mine"),
                lambda: s.read_resource("shop://orders/lamp"),
                lambda: s.get_prompt("reorder"),
            ):  # login_required's redirect, said as for a tool, as a JSON-RPC error
                with pytest.raises(MCPError) as refused:
                    await ask()
                error = refused.value.error
                assert error.code == -32600, error  # refused whatever the params, as a 401
                assert " answered as a view does and redirected to /login?next=" in error.message
                assert "needs a login, and the MCP connection carried none" in error.message
                assert error.data["httpStatus"] == 302  # type: ignore[index]
                assert error.data["location"].startswith("/login?next=")  # type: ignore[index]
            assert error.message.startswith("Prompt 'reorder' answered as a view does and")
            assert "this prompt needs a login" in error.message

        headers = {"Authorization": "Bearer ada"}
        async with connect(shop.url, headers) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            mine = await s.call_tool("orders", {})
            assert not mine.is_error
            assert mine.structured_content == {"user": "ada", "items": ["engine", "cards"]}
            report = await s.call_tool("admin_report", {})
            assert report.is_error
            text = report.content[0].text  # type: ignore[union-attr]
            assert text.startswith("The view refused the call (HTTP 403 FORBIDDEN)")
            assert "<" not in text  # Flask's HTML 403 page, as a short text

        async with (
            connect(shop.url, {"Cookie": cookie}) as (read, write),
            ClientSession(read, write) as s,
        ):
            await s.initialize()
            mine = await s.call_tool("orders", {})
            assert mine.structured_content == {"user": "bob", "items": ["lamp"]}
            lamp = await s.read_resource("shop://orders/lamp")
            assert lamp.contents[0].text == "lamp"  # type: ignore[union-attr]
            prompt = await s.get_prompt("reorder")
            assert prompt.messages[0].content.text == "Reorder lamp."  # type: ignore[union-attr]

        root = {"Authorization": "Bearer root"}
        async with connect(shop.url, root) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            report = await s.call_tool("admin_report", {})
            assert not report.is_error and report.structured_content == {"orders": 3}

    anyio.run(main)


@pytest.mark.parametrize("forward", [False, True], ids=["default", "forward_headers"])
def test_a_view_behind_an_api_key_header_through_the_official_client(forward: bool) -> None:
    """A view guarded by ``X-API-Key`` refuses every MCP call unless ViewTools names the
    header in ``forward_headers``; the MCP headers are never passed on."""
    env = {"API_KEY_FORWARD": "1" if forward else "0"}
    headers = {"X-API-Key": "key-of-the-e2e-test"}

    async def main(url: str) -> None:
        async with connect(url, headers) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            answer = await s.call_tool("stock", {})
            if not forward:
                assert answer.is_error
                text = answer.content[0].text  # type: ignore[union-attr]
                assert text.startswith("The view refused the call (HTTP 401 UNAUTHORIZED)")
                return
            assert not answer.is_error
            assert answer.structured_content == {"items": 7, "mcp_session": None}

    port = free_port()
    with start_server("tests._apps.api_key_app:app", "gthread", env=env, port=port) as server:
        anyio.run(main, server.url)
