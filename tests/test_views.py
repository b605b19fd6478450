"""Tools made from Flask views: schemas, the request a call builds, the answer's mapping."""

from __future__ import annotations

import typing as t

import pytest
from flask import Flask
from flask import Response
from flask import abort
from flask import jsonify
from flask import request

from flask_mcp import MCP
from flask_mcp.contrib.views import annotations_for
from flask_mcp.contrib.views import map_response
from flask_mcp.testing import MCPTestClient

pytest.importorskip("flask_smorest")


def plain_app() -> Flask:
    app = Flask(__name__)
    app.config["MCP_ALLOWED_HOSTS"] = ["localhost"]

    @app.get("/items/<int:item_id>")
    def item(item_id: int) -> t.Any:
        """Return one item."""
        if item_id > 10:
            abort(404)
        return jsonify(
            {"id": item_id, "q": request.args.to_dict(), "g": sorted(request.headers.keys())}
        )

    @app.route("/items/<uuid:key>/<path:rest>", methods=["PUT", "DELETE"])
    def both(key: t.Any, rest: str) -> t.Any:
        return jsonify(
            {
                "method": request.method,
                "key": str(key),
                "rest": rest,
                "body": request.json if request.method == "PUT" else None,
            }
        )

    @app.get("/whoami")
    def whoami() -> t.Any:
        return request.headers.get("Authorization", "nobody"), 200, {"Content-Type": "text/plain"}

    @app.get("/boom")
    def boom() -> t.Any:
        raise RuntimeError("database password is hunter2")

    @app.get("/teapot")
    def teapot() -> t.Any:
        return Response("short and stout", status=418)

    @app.get("/report.pdf")
    def report() -> t.Any:
        return Response(b"%PDF-1.4 ...", mimetype="application/pdf")

    return app


def test_plain_views_schemas_and_calls() -> None:
    app = plain_app()
    mcp = MCP(name="plain", version="1")
    made = mcp.tools_from_app(app)
    mcp.init_app(app)
    names = sorted(tool.name for tool in made)
    assert names == ["boom", "both_delete", "both_put", "item", "report", "teapot", "whoami"]
    tools = {tool.name: tool for tool in made}
    schema = tools["item"].input.schema
    assert schema["properties"]["item_id"] == {"type": "integer", "minimum": 0}
    assert schema["required"] == ["item_id"] and "body" not in schema["properties"]
    put = tools["both_put"].input.schema["properties"]
    assert put["key"] == {"type": "string", "format": "uuid"} and "body" in put
    assert "body" not in tools["both_delete"].input.schema["properties"]
    assert tools["item"].description == "Return one item."
    assert tools["both_delete"].annotations == annotations_for("DELETE")
    assert tools["both_delete"].annotations["destructiveHint"] is True
    assert tools["item"].annotations["readOnlyHint"] is True

    with MCPTestClient(app, headers={"Authorization": "Bearer tok-1"}) as client:
        result = client.call_tool("item", {"item_id": 3, "query": {"x": "1", "n": 2}})
        assert result["structuredContent"]["id"] == 3
        assert result["structuredContent"]["q"] == {"x": "1", "n": "2"}
        assert "Authorization" in result["structuredContent"]["g"]
        missing = client.call_tool("item", {"item_id": 11})
        assert missing["isError"] is True and "Not Found" in missing["content"][0]["text"]
        invalid = client.call_tool("item", {"item_id": "eleven"})
        assert invalid["isError"] is True
        key = "6a2f41a3-c54c-fce8-32d2-0324e1c32e22"
        put_result = client.call_tool("both_put", {"key": key, "rest": "a/b", "body": [1, 2]})
        assert put_result["structuredContent"] == {
            "method": "PUT",
            "key": key,
            "rest": "a/b",
            "body": [1, 2],
        }
        assert client.call_tool("whoami")["content"][0]["text"] == "Bearer tok-1"
        boom = client.call_tool("boom")
        assert boom["isError"] is True and "hunter2" not in str(boom)
        teapot = client.call_tool("teapot")
        assert teapot["isError"] is True and teapot["content"][0]["text"] == "short and stout"
        pdf = client.call_tool("report")["content"][0]
        assert pdf["type"] == "resource" and pdf["resource"]["mimeType"] == "application/pdf"
    with MCPTestClient(app) as client:
        assert client.call_tool("whoami")["content"][0]["text"] == "nobody"


def test_tool_from_view_by_endpoint_or_function_and_selection() -> None:
    app = plain_app()
    mcp = MCP(name="plain", version="1")
    mcp.init_app(app)
    tool = mcp.tool_from_view("item", name="get_item", tags={"read"})
    assert tool.name == "get_item" and tool.tags == {"read"}
    tool = mcp.tool_from_view(app.view_functions["both"], method="delete")
    assert tool.name == "both_delete"
    with pytest.raises(LookupError, match="pass method="):
        mcp.tool_from_view("both")
    with pytest.raises(LookupError, match="No route"):
        mcp.tool_from_view("nope")
    with pytest.raises(ValueError, match="'get_item'|already taken"):
        mcp.tools_from_app(app, name=lambda endpoint, method: "get_item")
    other = MCP(name="x", version="1")
    chosen = other.tools_from_app(app, include=["item", "both"], methods=["GET", "PUT"])
    assert sorted(tool.name for tool in chosen) == ["both_put", "item"]
    chosen = MCP(name="y", version="1").tools_from_app(app, exclude=["b*", "item"])
    assert sorted(tool.name for tool in chosen) == ["report", "teapot", "whoami"]
    # the MCP endpoint itself is never a tool
    assert all(not tool.name.startswith("mcp") for tool in mcp.registry.tools.values())


def test_map_response() -> None:
    result = map_response(200, "200 OK", "application/json", b"[1]", "/x").to_dict()
    assert result["structuredContent"] == {"result": [1]}
    assert map_response(204, "204 NO CONTENT", "application/json", b"", "/x").to_dict() == {
        "content": [{"type": "text", "text": "204 NO CONTENT"}]
    }
    assert (
        map_response(200, "200 OK", "text/csv", b"a,b", "/x").to_dict()["content"][0]["text"]
        == "a,b"
    )
    with pytest.raises(Exception, match="answered 503"):
        map_response(503, "503 SERVICE UNAVAILABLE", "text/plain", b"down", "/x")


def test_smorest_example_schemas_and_auth() -> None:
    from examples.smorest_app import create_app

    app = create_app()
    with MCPTestClient(app) as client:
        tools = {tool["name"]: tool for tool in client.list_tools()}
        assert sorted(tools) == [
            "health",
            "pets_pets_get",
            "pets_pets_post",
            "pets_petsbyid_delete",
            "pets_petsbyid_get",
            "pets_photo",
        ]
        listing = tools["pets_pets_get"]["inputSchema"]["properties"]
        assert listing["limit"]["minimum"] == 1 and listing["species"]["enum"] == [
            "dog",
            "cat",
            "bird",
        ]
        body = tools["pets_pets_post"]["inputSchema"]["properties"]["body"]
        assert "id" not in body["properties"]  # dump_only
        assert body["required"] == ["name", "species"]
        assert tools["pets_pets_get"]["description"].startswith("List pets")
        taken = client.call_tool("pets_pets_post", {"body": {"name": "Rex", "species": "dog"}})
        assert taken["isError"] is True and taken["structuredContent"]["code"] == 422
        refused = client.call_tool("pets_petsbyid_delete", {"pet_id": 1})
        assert refused["isError"] is True and refused["structuredContent"]["code"] == 401
        assert (
            client.call_tool("pets_petsbyid_get", {"pet_id": 1})["structuredContent"]["name"]
            == "Rex"
        )
    with MCPTestClient(app, headers={"Authorization": "Bearer wrong"}) as client:
        refused = client.call_tool("pets_petsbyid_delete", {"pet_id": 1})
        assert refused["structuredContent"]["code"] == 403
    with MCPTestClient(app, headers={"Authorization": "Bearer admin-secret"}) as client:
        assert not client.call_tool("pets_petsbyid_delete", {"pet_id": 2}).get("isError")
        gone = client.call_tool("pets_petsbyid_get", {"pet_id": 2})
        assert gone["isError"] is True and gone["structuredContent"]["code"] == 404


def test_webargs_arguments_of_a_plain_view() -> None:
    import marshmallow as ma
    from webargs.flaskparser import use_args
    from webargs.flaskparser import use_kwargs

    class Search(ma.Schema):
        q = ma.fields.String(required=True)
        limit = ma.fields.Integer(validate=ma.validate.Range(min=1, max=5))

    app = Flask(__name__)
    app.config["MCP_ALLOWED_HOSTS"] = ["localhost"]

    @app.get("/search")
    @use_args(Search(), location="query")
    def search(args: dict[str, t.Any]) -> t.Any:
        """Search things."""
        return jsonify({"q": args["q"], "limit": args.get("limit")})

    @app.post("/notes/<int:folder>")
    @use_kwargs({"title": ma.fields.String(required=True)})  # the parser's default: json
    def note(folder: int, title: str) -> t.Any:
        return jsonify({"folder": folder, "title": title}), 201

    mcp = MCP(name="webargs", version="1")
    tools = {tool.name: tool for tool in mcp.tools_from_app(app)}
    mcp.init_app(app)
    schema = tools["search"].input.schema
    assert set(schema["properties"]) == {"q", "limit"} and schema["required"] == ["q"]
    assert schema["properties"]["limit"]["maximum"] == 5
    body = tools["note"].input.schema["properties"]["body"]
    assert body["properties"]["title"]["type"] == "string" and body["required"] == ["title"]
    assert tools["note"].input.schema["required"] == ["folder", "body"]
    with MCPTestClient(app) as client:
        found = client.call_tool("search", {"q": "x", "limit": 2})
        assert found["structuredContent"] == {"q": "x", "limit": 2}
        assert client.call_tool("search", {"q": "x", "limit": 9})["isError"] is True
        made = client.call_tool("note", {"folder": 4, "body": {"title": "hi"}})
        assert made["structuredContent"] == {"folder": 4, "title": "hi"}


def test_view_tools_in_the_stateless_era() -> None:
    app = plain_app()
    mcp = MCP(name="plain", version="1")
    mcp.tools_from_app(app, include=["item", "whoami"])
    mcp.init_app(app)
    headers = {"Authorization": "Bearer s-1"}
    with MCPTestClient(app, protocol_version="2026-07-28", headers=headers) as client:
        assert sorted(tool["name"] for tool in client.list_tools()) == ["item", "whoami"]
        assert client.call_tool("item", {"item_id": 5})["structuredContent"]["id"] == 5
        assert client.call_tool("item", {"item_id": 50})["isError"] is True
        assert client.call_tool("whoami")["content"][0]["text"] == "Bearer s-1"
