"""Tools made from Flask views: schemas, the request a call builds, the answer's mapping."""

from __future__ import annotations

import typing as t

import pytest
from flask import Flask
from flask import Response
from flask import abort
from flask import current_app
from flask import jsonify
from flask import request

from flask_mcp import MCP
from flask_mcp.contrib.view_answers import map_response
from flask_mcp.contrib.view_tools import ViewTools
from flask_mcp.contrib.views import annotations_for
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
    views = ViewTools(mcp)
    views.add_routes()
    mcp.init_app(app)
    made = views.init_app(app)
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
        assert teapot["isError"] is True
        assert teapot["content"][0]["text"].endswith("It said: short and stout")
        pdf = client.call_tool("report")["content"][0]
        assert pdf["type"] == "resource" and pdf["resource"]["mimeType"] == "application/pdf"
    with MCPTestClient(app) as client:
        assert client.call_tool("whoami")["content"][0]["text"] == "nobody"


def test_tool_from_view_by_endpoint_or_function_and_selection() -> None:
    app = plain_app()
    mcp = MCP(name="plain", version="1")
    mcp.init_app(app)
    views = ViewTools(mcp, app)
    (tool,) = views.add_view("item", name="get_item", tags={"read"})
    assert tool.name == "get_item" and tool.tags == {"read"}
    (tool,) = views.add_view(app.view_functions["both"], method="delete")
    assert tool.name == "both_delete"
    with pytest.raises(LookupError, match="pass method="):
        views.add_view("both")
    with pytest.raises(LookupError, match="No route"):
        views.add_view("nope")
    with pytest.raises(ValueError, match="'get_item'|already taken"):
        views.add_routes(name=lambda endpoint, method: "get_item")
    with pytest.raises(RuntimeError, match="already registered"):
        views.init_app(app)

    def chosen(**selection: t.Any) -> list[str]:
        other = ViewTools(MCP(name="x", version="1"))
        other.add_routes(**selection)
        fresh = Flask(__name__)
        fresh.url_map = app.url_map  # the same routes, on an app of its own
        fresh.view_functions = app.view_functions
        return sorted(tool.name for tool in other.init_app(fresh))

    assert chosen(include=["item", "both"], methods=["GET", "PUT"]) == ["both_put", "item"]
    assert chosen(exclude=["b*", "item"]) == ["report", "teapot", "whoami"]
    assert chosen(include=["/items"]) == ["both_delete", "both_put", "item"]
    assert chosen(exclude=["/items/", "/report.pdf"]) == ["boom", "teapot", "whoami"]
    # the MCP endpoint itself is never a tool
    assert all(not tool.name.startswith("mcp") for tool in mcp.registry.tools.values())


def test_map_response() -> None:
    def mapped(status: str, mime: str, data: bytes, **headers: str) -> dict[str, t.Any]:
        return map_response(status, {"Content-Type": mime, **headers}, data, "/x").to_dict()

    assert mapped("200 OK", "application/json", b"[1]")["structuredContent"] == {"result": [1]}
    assert mapped("204 NO CONTENT", "application/json", b"") == {
        "content": [{"type": "text", "text": "204 NO CONTENT"}]
    }
    assert mapped("200 OK", "text/csv", b"a,b")["content"][0]["text"] == "a,b"
    page = b"<html><head><title>T</title><style>p{}</style></head><body><p>Hi <b>there</b></p>"
    assert mapped("200 OK", "text/html", page)["content"][0]["text"] == "Hi there"
    down = mapped(
        "503 SERVICE UNAVAILABLE", "text/plain", b"db at 10.0.0.5", **{"Retry-After": "7"}
    )
    assert down["isError"] is True and "10.0.0.5" not in str(down)
    assert down["content"][0]["text"].endswith("Retry in 7 s.")


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
        # summary and description read as the docstring they came from, not run together
        assert tools["pets_pets_get"]["description"] == (
            "List pets\n\nPets in id order, optionally of one species."
        )
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
    views = ViewTools(mcp)
    views.add_routes()
    mcp.init_app(app)
    tools = {tool.name: tool for tool in views.init_app(app)}
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
    views = ViewTools(mcp)
    views.add_routes(include=["item", "whoami"])
    mcp.init_app(app)
    views.init_app(app)
    headers = {"Authorization": "Bearer s-1"}
    with MCPTestClient(app, protocol_version="2026-07-28", headers=headers) as client:
        assert sorted(tool["name"] for tool in client.list_tools()) == ["item", "whoami"]
        assert client.call_tool("item", {"item_id": 5})["structuredContent"]["id"] == 5
        assert client.call_tool("item", {"item_id": 50})["isError"] is True
        assert client.call_tool("whoami")["content"][0]["text"] == "Bearer s-1"


def login_app() -> Flask:
    """A Flask-Login app: a login page, a protected view, an admin-only view, and a bearer login."""
    from flask_login import LoginManager
    from flask_login import UserMixin
    from flask_login import current_user
    from flask_login import login_required

    class User(UserMixin):
        def __init__(self, user_id: str) -> None:
            self.id = user_id

    app = Flask(__name__)
    app.config.update(SECRET_KEY="s", MCP_ALLOWED_HOSTS=["localhost"])
    manager = LoginManager(app)
    manager.login_view = "login"

    @manager.request_loader
    def from_token(req: t.Any) -> User | None:
        token = req.headers.get("Authorization", "")
        return User(token.removeprefix("Bearer ")) if token.startswith("Bearer ") else None

    @app.get("/login")
    def login() -> t.Any:
        return "<html><body><form>Sign in</form></body></html>"

    @app.get("/orders")
    @login_required
    def orders() -> t.Any:
        return jsonify({"user": current_user.id})

    @app.get("/admin")
    @login_required
    def admin() -> t.Any:
        if current_user.id != "root":
            abort(403)
        return jsonify({"admin": True})

    @app.get("/old")
    def old() -> t.Any:
        from flask import redirect

        return redirect("/orders", 301)

    @app.get("/api-key")
    def api_key() -> t.Any:
        return jsonify({"error": "missing API key"}), 401

    @app.get("/crash")
    def crash() -> t.Any:
        return Response("<html><body><h1>Oops</h1><pre>password=hunter2</pre>", status=500)

    @app.get("/busy")
    def busy() -> t.Any:
        return Response("busy", status=429, headers={"Retry-After": "30"})

    @app.get("/gone/<int:n>")
    def gone(n: int) -> t.Any:
        abort(404)

    return app


def test_redirects_and_refusals_are_one_line_errors_a_model_can_act_on() -> None:
    app = login_app()
    mcp = MCP(name="login", version="1")
    mcp.init_app(app)
    views = ViewTools(mcp, app)
    views.add_routes()

    def text(result: dict[str, t.Any]) -> str:
        assert result["isError"] is True, result
        (block,) = result["content"]
        assert "\n" not in block["text"] and "<" not in block["text"], block["text"]
        return t.cast(str, block["text"])

    with MCPTestClient(app) as client:  # no login
        needs_login = text(client.call_tool("orders"))
        assert needs_login.startswith("The view redirected to /login?next=")
        assert "this tool needs a login" in needs_login
        assert "Sign in" not in needs_login  # the login page is not the answer
        moved = text(client.call_tool("old"))
        assert moved.startswith("The view redirected to /orders (HTTP 301 MOVED PERMANENTLY)")
        assert "does not follow redirects" in moved
        refused = client.call_tool("api_key")
        assert "needs authentication" in text(refused)
        assert refused["structuredContent"] == {"error": "missing API key"}
        crashed = text(client.call_tool("crash"))
        assert "HTTP 500" in crashed and "hunter2" not in crashed and "Oops" not in crashed
        assert text(client.call_tool("busy")).startswith(
            "The view refused the call (HTTP 429 TOO MANY REQUESTS): too many calls. Retry in 30 s."
        )
        missing = text(client.call_tool("gone", {"n": 3}))
        assert missing.startswith("The view found nothing (HTTP 404 NOT FOUND)")
        assert len(missing) < 400  # Flask's HTML 404 page, as a short text
    with MCPTestClient(app, headers={"Authorization": "Bearer ada"}) as client:
        assert client.call_tool("orders")["structuredContent"] == {"user": "ada"}
        forbidden = text(client.call_tool("admin"))
        assert forbidden.startswith("The view refused the call (HTTP 403 FORBIDDEN)")
        assert "not allowed" in forbidden
    with MCPTestClient(app, headers={"Authorization": "Bearer root"}) as client:
        assert client.call_tool("admin")["structuredContent"] == {"admin": True}


def test_a_view_served_with_defaults_is_one_tool_with_an_optional_variable() -> None:
    """Flask's ``defaults=`` idiom: two rules of one view made two tools of one name (refused,
    and ``name=`` cannot tell them apart), and the defaulted rule alone required a ``page``
    its schema did not describe, then ignored it."""
    app = Flask(__name__)
    app.config["MCP_ALLOWED_HOSTS"] = ["localhost"]

    @app.get("/pets/", defaults={"page": 1})
    @app.get("/pets/page/<int:page>")
    def pets(page: int) -> t.Any:
        return jsonify({"page": page, "path": request.path})

    @app.get("/")
    @app.get("/index")
    def index() -> t.Any:
        return "home"

    mcp = MCP(name="pages", version="1")
    mcp.init_app(app)
    views = ViewTools(mcp, app)
    views.add_routes()
    with MCPTestClient(app) as client:
        tools = {tool["name"]: tool["inputSchema"] for tool in client.list_tools()}
        assert sorted(tools) == ["index", "pets"]
        assert tools["pets"]["properties"]["page"] == {
            "type": "integer",
            "minimum": 0,
            "default": 1,
        }
        assert "required" not in tools["pets"]
        assert client.call_tool("pets")["structuredContent"] == {"page": 1, "path": "/pets/"}
        third = client.call_tool("pets", {"page": 3})["structuredContent"]
        assert third == {"page": 3, "path": "/pets/page/3"}
        assert client.call_tool("index")["content"] == [{"type": "text", "text": "home"}]

    other = Flask(__name__)
    other.add_url_rule("/pets/", "pets", pets, defaults={"page": 1})
    other.add_url_rule("/pets/page/<int:page>", "pets", pets)
    first = MCP(name="pages", version="1")
    first.init_app(other)
    (tool,) = ViewTools(first, other).add_view("pets")
    assert tool.name == "pets"
    only_first = Flask(__name__)
    only_first.add_url_rule("/pets/", "pets", pets, defaults={"page": 1})
    alone = MCP(name="pages", version="1")
    alone.init_app(only_first)
    ViewTools(alone, only_first).add_view("pets")
    with MCPTestClient(only_first) as client:
        (listed,) = client.list_tools()
        assert "page" not in listed["inputSchema"]["properties"]
        assert "required" not in listed["inputSchema"]


def test_a_hand_written_login_redirect_says_the_tool_needs_a_login() -> None:
    """Flask's tutorial guards views with ``redirect(url_for("auth.login"))`` (no Flask-Login,
    no ``next=``), here in a blueprint's ``before_request``: the model is told to get a login,
    not that "nothing was done at the new address"."""
    from flask import Blueprint
    from flask import redirect
    from flask import session
    from flask import url_for

    auth = Blueprint("auth", __name__, url_prefix="/auth")
    admin = Blueprint("admin", __name__, url_prefix="/admin")

    @auth.get("/login")
    def login() -> t.Any:
        return "<html><body><form>Log In</form></body></html>"

    @admin.before_request
    def require_user() -> t.Any:
        if session.get("user_id") is None:
            return redirect(url_for("auth.login"))
        return None

    @admin.get("/stats")
    def stats() -> t.Any:
        return jsonify({"users": 3})

    @admin.get("/sso")
    def sso() -> t.Any:
        return redirect("https://idp.example.com/oauth2/authorize?client_id=shop")

    @admin.get("/moved")
    def moved() -> t.Any:
        return redirect("/admin/stats-v2", 301)

    app = Flask(__name__)
    app.config.update(SECRET_KEY="s", MCP_ALLOWED_HOSTS=["localhost"])
    app.register_blueprint(auth)
    app.register_blueprint(admin)
    mcp = MCP(name="tutorial", version="1")
    mcp.init_app(app)
    ViewTools(mcp, app).add_routes(include=["admin"])
    with MCPTestClient(app) as client:
        text = client.call_tool("admin_stats")["content"][0]["text"]
        assert text.startswith("The view redirected to /auth/login (HTTP 302 FOUND)")
        assert "this tool needs a login" in text and "Log In" not in text
        with client.client.session_transaction() as signed_in:
            signed_in["user_id"] = 1
        assert "needs a login" in client.call_tool("admin_sso")["content"][0]["text"]
        moved_text = client.call_tool("admin_moved")["content"][0]["text"]
        assert "does not follow redirects" in moved_text and "login" not in moved_text


@pytest.mark.parametrize("protection", ["basic", "strong"])
def test_a_session_login_keeps_its_flask_login_identity(protection: str) -> None:
    """Flask-Login's session protection hashes the address and the ``User-Agent``: the view
    gets the caller's, so a session cookie stays logged in (``"strong"``) and fresh
    (``fresh_login_required``), behind a proxy (``X-Forwarded-For``) too."""
    from flask_login import LoginManager
    from flask_login import UserMixin
    from flask_login import current_user
    from flask_login import fresh_login_required
    from flask_login import login_user

    class User(UserMixin):
        def __init__(self, user_id: str) -> None:
            self.id = user_id

    app = Flask(__name__)
    app.config.update(SECRET_KEY="s", MCP_ALLOWED_HOSTS=["localhost"])
    manager = LoginManager(app)
    manager.login_view = "sign_in"
    manager.session_protection = protection
    manager.user_loader(User)

    @app.post("/sign-in")
    def sign_in() -> t.Any:
        login_user(User(request.form["user"]))
        return "signed in"

    @app.get("/settings")
    @fresh_login_required
    def settings() -> t.Any:
        return jsonify({"user": current_user.id})

    mcp = MCP(name="login", version="1")
    mcp.init_app(app)
    ViewTools(mcp, app).add_view("settings")
    headers = {"User-Agent": "claude-desktop/1.0", "X-Forwarded-For": "203.0.113.7"}
    with MCPTestClient(app, headers=headers) as client:
        client.client.post("/sign-in", data={"user": "bob"}, headers=headers)  # the cookie jar
        assert client.client.get("/settings", headers=headers).json == {"user": "bob"}
        result = client.call_tool("settings")
        assert result.get("structuredContent") == {"user": "bob"}, result


def test_flask_mcp_routes_and_static_are_never_tools() -> None:
    from prometheus_client import CollectorRegistry

    from flask_mcp.contrib.prometheus import PrometheusMetrics

    app = Flask(__name__, static_folder=".", static_url_path="/static")
    app.config.update(
        MCP_AUTH_RESOURCE="https://mcp.example.com/api/mcp",
        MCP_AUTH_AUTHORIZATION_SERVERS=["https://auth.example.com"],
        MCP_ALLOWED_HOSTS=["localhost"],
        MCP_HEALTH_LIVENESS_PATH="/livez",
        MCP_HEALTH_READINESS_PATH="/readyz",
        MCP_PATH="/api/mcp",
    )

    @app.get("/api/items")
    def items() -> t.Any:
        return jsonify([])

    mcp = MCP(name="own", version="1", authorizer=lambda token, request: {"sub": "x"})
    mcp.init_app(app)
    PrometheusMetrics(mcp, app, registry=CollectorRegistry())
    app.add_url_rule("/.well-known/thing", "thing", lambda: "x")
    views = ViewTools(mcp)
    views.add_routes(include=["*", "/"])  # everything it may take
    made = views.init_app(app)
    assert [tool.name for tool in made] == ["items"]
    rules = {rule.rule for rule in app.url_map.iter_rules()}
    assert {"/api/mcp", "/livez", "/readyz", "/metrics", "/static/<path:filename>"} <= rules
    assert any(rule.startswith("/.well-known/oauth-protected-resource") for rule in rules)


def test_a_factory_app_whose_routes_select_other_tools_is_refused() -> None:
    """One server offers one set of tools (docs/views.md): an app of the factory whose
    ``add_routes`` selection gives a tool the others lack (a blueprint registered by
    configuration), or lacks one they give, is refused at ``init_app``; accepted, the
    other apps listed a tool they have no route for, which failed when called."""

    def make(admin: bool) -> Flask:
        app = Flask(__name__)
        app.add_url_rule("/api/items", "items", lambda: jsonify([]))
        if admin:
            app.add_url_rule("/api/admin/purge", "purge", lambda: "purged", methods=["POST"])
        return app

    def factory() -> tuple[ViewTools, t.Callable[[bool], Flask]]:
        mcp = MCP(name="shop", version="1")
        views = ViewTools(mcp)
        views.add_routes(include=["/api"])

        def create_app(admin: bool) -> Flask:
            app = make(admin)
            mcp.init_app(app)
            views.init_app(app)
            return app

        return views, create_app

    views, create_app = factory()
    plain = create_app(False)
    with pytest.raises(ValueError, match=r"'purge'.*exclude="):
        create_app(True)
    with MCPTestClient(plain) as client:
        assert [tool["name"] for tool in client.list_tools()] == ["items"]

    views, create_app = factory()
    create_app(True)
    refused = make(admin=False)
    views.mcp.init_app(refused)
    with pytest.raises(ValueError, match=r"'purge'"):
        views.init_app(refused)
    refused.add_url_rule("/api/admin/purge", "purge", lambda: "purged", methods=["POST"])
    assert sorted(tool.name for tool in views.init_app(refused)) == ["items", "purge"]

    views = ViewTools(MCP(name="shop", version="1"))
    views.add_routes(include=["/api/items"])
    views.add_view("purge")
    with pytest.raises(LookupError, match="purge"):
        views.init_app(make(admin=False))
    assert not views.mcp.registry.tools  # its first declaration's 'items' is not listed


def test_a_declaration_after_init_app_returns_each_tool_once() -> None:
    """``add_view`` after ``init_app`` on two apps of a factory makes one tool (bound on
    both): it returns that tool once, not once per app. One refused on an app adds
    nothing on any: accepted on the first, its tools stayed listed, bound there only. A
    later app binds a disabled tool (it was refused as a name already registered)."""
    mcp = MCP(name="shop", version="1")
    views = ViewTools(mcp)
    apps = []
    for store in ("north", "south"):
        app = Flask(__name__)
        app.config["STORE"] = store
        app.add_url_rule("/stock", "stock", lambda: jsonify(current_app.config["STORE"]))
        app.add_url_rule("/report", "report", lambda: "ok")
        if store == "south":
            app.add_url_rule("/extra", "extra", lambda: "ok")
        mcp.init_app(app)
        views.init_app(app)
        apps.append(app)
    (tool,) = views.add_view("stock")
    assert tool.name == "stock"
    for app, store in zip(apps, ("north", "south"), strict=True):
        with MCPTestClient(app) as client:
            assert client.call_tool("stock")["structuredContent"] == {"result": store}
    assert [made.name for made in views.add_routes(include=["/stock"], name=lambda e, m: "s2")] == [
        "s2"
    ]
    with pytest.raises(ValueError, match=r"extra: 'extra'"):
        views.add_routes(include=["/report", "/extra"])  # the selection differs on south
    with pytest.raises(ValueError, match="Invalid tool name 'a report'.*name="):
        views.add_routes(
            include=["/stock", "/report"], name=lambda e, m: f"{e}2" if e == "stock" else f"a {e}"
        )
    assert not mcp.registry.known("report") and not mcp.registry.known("stock2")
    assert sorted(views.tools(apps[0])) == sorted(views.tools(apps[1])) == ["s2", "stock"]
    assert [made.name for made in views.add_routes(include=["/report"])] == ["report"]
    mcp.disable("stock")  # still made: a later app of the factory binds it, disabled
    later = Flask(__name__)
    later.config["STORE"] = "west"
    later.add_url_rule("/stock", "stock", lambda: jsonify(current_app.config["STORE"]))
    later.add_url_rule("/report", "report", lambda: "ok")
    mcp.init_app(later)
    assert sorted(tool.name for tool in views.init_app(later)) == ["report", "s2", "stock"]
    mcp.enable("stock")
    with MCPTestClient(later) as client:
        assert client.call_tool("stock")["structuredContent"] == {"result": "west"}
    # Removed, a view tool is removed for every app: a later app neither makes it again
    # nor binds its view to another tool given its name; a new declaration makes it.
    mcp.remove_tool("report")
    mcp.remove_tool("s2")
    mcp.tool(name="s2")(lambda: "mine")
    last = Flask(__name__)
    last.add_url_rule("/stock", "stock", lambda: "east")
    last.add_url_rule("/report", "report", lambda: "ok")
    mcp.init_app(last)
    assert [tool.name for tool in views.init_app(last)] == ["stock"]
    assert not mcp.registry.known("report")
    assert sorted(views.tools(last)) == sorted(views.tools(apps[0])) == ["stock"]
    with MCPTestClient(last) as client:
        assert client.call_tool("s2")["content"][0]["text"] == "mine"
    with pytest.raises(ValueError, match="'s2' already taken"):
        views.add_routes(include=["/report"], name=lambda e, m: "s2")
    assert [made.name for made in views.add_view("report")] == ["report"]
    assert "report" in views.tools(last) and "report" in views.tools(apps[0])


@pytest.mark.parametrize(
    "header", ["Host", "content-length", "Connection", "Mcp-Session-Id", "MCP-Protocol-Version"]
)
def test_forward_headers_refuses_the_headers_of_the_mcp_request(header: str) -> None:
    """Only headers that say who is calling are passed on; the error says which to name."""
    with pytest.raises(ValueError, match="such as 'X-API-Key'"):
        ViewTools(MCP(name="x", version="1"), forward_headers=(header,))
