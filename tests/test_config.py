"""Configuration: misspelled MCP_* keys warn, optional dependencies are checked at init_app."""

from __future__ import annotations

import configparser
import sys
import typing as t
import warnings
from pathlib import Path

import pytest
from flask import Flask
from wire import initialize_request

from flask_mcp import MCP
from flask_mcp import ConfigWarning
from flask_mcp.config import KEYS
from flask_mcp.config import OAUTH_SERVER_KEYS
from flask_mcp.config import Key
from flask_mcp.contrib.oauth_server.server import load_oauth_settings

SETUP_CFG = Path(__file__).resolve().parent.parent / "setup.cfg"
AUTH = {
    "MCP_AUTH_RESOURCE": "https://mcp.example.com/mcp",
    "MCP_AUTH_AUTHORIZATION_SERVERS": ["https://auth.example.com"],
}


def init(config: dict[str, t.Any] | None = None, mcp: MCP | None = None) -> Flask:
    app = Flask(__name__)
    app.config.update(config or {})
    (mcp or MCP(name="config", version="1")).init_app(app)
    return app


# -- unknown keys ------------------------------------------------------------------------


def test_misspelled_key_warns_with_the_closest_key() -> None:
    with pytest.warns(ConfigWarning) as record:
        init({"MCP_PAGE_SIZ": 10, "MCP_EXPOSE_INTERNAL_ERROR": True})
    messages = sorted(str(w.message) for w in record)
    assert len(messages) == 2
    assert "MCP_EXPOSE_INTERNAL_ERROR" in messages[0]
    assert "did you mean MCP_EXPOSE_INTERNAL_ERRORS?" in messages[0]
    assert "MCP_PAGE_SIZ" in messages[1] and "did you mean MCP_PAGE_SIZE?" in messages[1]
    assert all(w.filename == __file__ for w in record)  # points at the app's init_app call


def test_key_without_a_close_match_names_the_docs() -> None:
    with pytest.warns(ConfigWarning, match="MCP_ZEBRA.*configuration table"):
        init({"MCP_ZEBRA": 1})


def test_misspelled_key_from_the_environment_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLASK_MCP_SSE_HEARTBEET", "5")
    app = Flask(__name__)
    app.config.from_prefixed_env()
    with pytest.warns(ConfigWarning, match="did you mean MCP_SSE_HEARTBEAT"):
        MCP(name="config", version="1").init_app(app)


def test_the_old_buffer_key_names_its_new_name() -> None:
    """MCP_SSE_BUFFER_SIZE (renamed before the first release, no alias) is not read."""
    with pytest.warns(ConfigWarning, match="did you mean MCP_SSE_BUFFER_EVENTS"):
        app = init({"MCP_SSE_BUFFER_SIZE": 3})
    assert app.extensions["mcp"].state(app).settings.sse_buffer_events == 1000


def test_valid_and_foreign_keys_do_not_warn() -> None:
    config = {key.name: key.default for key in KEYS}
    # other extensions' keys, even MCP-ish ones, are none of Flask-MCP's business
    config.update(SQLALCHEMY_DATABASE_URI="sqlite://", MCPX_SETTING=1, FLASK_MCP_PATH="/x")
    config["MCP_EXPOSE_INTERNAL_ERRORS"] = None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        init(config)


def test_config_warning_can_be_an_error() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfigWarning)
        with pytest.raises(ConfigWarning):
            init({"MCP_BAKEND": "memory://"})
    assert issubclass(ConfigWarning, UserWarning)


def test_expose_internal_errors_defaults_to_none_and_parses_strings() -> None:
    assert init().config["MCP_EXPOSE_INTERNAL_ERRORS"] is None  # follow app.debug
    app = init({"MCP_EXPOSE_INTERNAL_ERRORS": "false"})
    assert app.extensions["mcp"].state(app).settings.expose_internal_errors is False


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("MCP_SSE_HEARTBEAT", "inf", "must be a finite number of seconds"),
        ("MCP_REQUEST_TIMEOUT", "nan", "must be a finite number of seconds"),
        ("MCP_SESSION_IDLE_TIMEOUT", float("inf"), "must be a finite number of seconds"),
        ("MCP_AUTH_JWT_LEEWAY", "nan", "must be a finite number of seconds"),
        ("MCP_PAGE_SIZE", 2.7, "must be a whole number"),
        ("MCP_PAGE_SIZE", float("inf"), "must be a whole number"),
        ("MCP_SSE_RESUME_BYTES", True, "must be an integer, not a boolean"),
        ("MCP_TASK_TIMEOUT", True, "not a boolean"),
    ],
)
def test_numbers_are_refused_rather_than_bent(key: str, value: t.Any, says: str) -> None:
    """Infinity, NaN, a fraction for a count and a boolean are refused with the key's name:
    infinity crashed the first streamed response (``OverflowError``), NaN made every
    comparison false, and ``int()`` cut 2.7 to 2 and took ``True`` for 1."""
    with pytest.raises(ValueError, match=f"Invalid {key}=.*{says}"):
        init({key: value})
    assert init({"MCP_PAGE_SIZE": 50.0, "MCP_SSE_HEARTBEAT": "2.5"}).config["MCP_PAGE_SIZE"] == 50.0


def none_means_something(key: Key) -> bool:
    """Tell whether ``None`` is a documented value of ``key``: its default, or "(None: ...)"."""
    return key.default is None or "None:" in key.doc


@pytest.mark.parametrize(
    "key",
    [key for key in (*KEYS, *OAUTH_SERVER_KEYS) if not none_means_something(key)],
    ids=lambda key: key.name,
)
def test_none_is_refused_where_it_means_nothing(key: Key) -> None:
    """``None`` (an unset variable of the app's own, ``FLASK_MCP_X=null``) read as false for
    a boolean (``MCP_ENABLE_GET_STREAM = None`` turned the GET stream off) and as "no
    algorithms" or "no backend" elsewhere; it is refused now with what the key takes."""
    says = rf"Invalid {key.name}=None: None is not a value of this key\. Set it to .*its default"
    with pytest.raises(ValueError, match=says):
        if key in OAUTH_SERVER_KEYS:
            load_oauth_settings({key.name: None})
        else:
            init({key.name: None})


def test_none_keeps_its_documented_meaning() -> None:
    documented = [k for k in KEYS if k.default is not None and none_means_something(k)]
    assert documented, "keys whose None is not their default (never, no bound)"
    app = init({key.name: None for key in documented})
    settings = app.extensions["mcp"].state(app).settings
    assert settings.session_idle_timeout is None and settings.max_sessions_per_client is None
    assert load_oauth_settings({"MCP_OAUTH_TOKEN_RATE_LIMIT": None}).token_rate_limit is None


def test_allowed_origins_are_written_as_browsers_send_them() -> None:
    """An origin copied with a trailing ``/``, capitals or a default port still matches the
    ``Origin`` header: each was refused with 403 "add it to MCP_ALLOWED_ORIGINS" while it
    was there."""
    listed = ["https://App.example.com/", "https://other.example.com:443", "http://dev.local:8080"]
    app = init({"MCP_ALLOWED_ORIGINS": listed})
    assert app.extensions["mcp"].state(app).settings.allowed_origins == (
        "https://app.example.com",
        "https://other.example.com",
        "http://dev.local:8080",
    )
    client = app.test_client()
    headers = {"Accept": "application/json, text/event-stream"}
    body = initialize_request()
    for sent in ("https://app.example.com", "https://other.example.com", "http://dev.local:8080"):
        response = client.post("/mcp", json=body, headers={**headers, "Origin": sent})
        assert response.status_code == 200, (sent, response.get_json())
    response = client.post("/mcp", json=body, headers={**headers, "Origin": "http://dev.local"})
    assert response.status_code == 403
    assert init({"MCP_ALLOWED_ORIGINS": "*, null"}).config["MCP_ALLOWED_ORIGINS"] == "*, null"


@pytest.mark.parametrize(
    "value", ["https://app.example.com/mcp", "app.example.com", "https://app.example.com/?x=1"]
)
def test_an_allowed_origin_with_a_path_is_refused_with_the_fix(value: str) -> None:
    with pytest.raises(ValueError, match=r"Invalid MCP_ALLOWED_ORIGINS=.*scheme://host\[:port\]"):
        init({"MCP_ALLOWED_ORIGINS": [value]})


def test_allowed_hosts_match_whatever_their_case() -> None:
    """Host names are case-insensitive: the Host header was lower-cased before the check but
    the list was not, so ``MCP_ALLOWED_HOSTS = ["MCP.example.com"]`` refused its own host."""
    app = init({"MCP_ALLOWED_HOSTS": ["MCP.Example.com", "*.unused"]})
    response = app.test_client().post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Accept": "application/json, text/event-stream", "Host": "mcp.example.com"},
        environ_base={"REMOTE_ADDR": "10.0.0.1"},
    )
    assert response.status_code != 421, response.get_json()


def test_an_allowed_host_given_as_a_url_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="list the host name 'mcp.example.com' or host:port"):
        init({"MCP_ALLOWED_HOSTS": ["https://mcp.example.com/"]})


def test_public_lists_that_vary_by_caller_are_refused_with_the_fix() -> None:
    """A ``public`` list may be shared with any caller: one filtered by scopes may not."""
    config = {"MCP_CACHE_SCOPE": "public", "MCP_AUTH_HIDE_UNAUTHORIZED": True}
    with pytest.raises(ValueError, match="set MCP_CACHE_SCOPE = 'private'"):
        init(config)
    init({**config, "MCP_CACHE_SCOPE": "private"})


# -- optional dependencies -----------------------------------------------------------------


def extras() -> dict[str, str]:
    parser = configparser.ConfigParser()
    parser.read(SETUP_CFG)
    return dict(parser["options.extras_require"])


def test_state_encrypt_needs_cryptography_at_init_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cryptography", None)
    with pytest.raises(ImportError, match=r"MCP_STATE_ENCRYPT.*pip install 'Flask-MCP\[crypto\]'"):
        init({"MCP_STATE_ENCRYPT": True, "SECRET_KEY": "k"})
    assert "cryptography" in extras()["crypto"]
    init({"MCP_STATE_ENCRYPT": False})  # signing alone needs nothing


def test_redis_backend_needs_redis_at_init_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)
    url = "redis://:hunter2@127.0.0.1:1/0"
    with pytest.raises(ImportError, match=r"pip install 'Flask-MCP\[redis\]'") as info:
        init({"MCP_BACKEND": url})
    assert "hunter2" not in str(info.value)
    assert "redis" in extras()["redis"]


def test_jwt_authorization_needs_pyjwt_at_init_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jwt", None)
    config = {**AUTH, "MCP_AUTH_JWT_JWKS_URL": "https://auth.example.com/jwks"}
    with pytest.raises(ImportError, match=r"MCP_AUTH_JWT_JWKS_URL.*'Flask-MCP\[jwt\]'"):
        init(config)
    assert "PyJWT" in extras()["jwt"]
    # an authorizer of the app's own needs no PyJWT
    mcp = MCP(name="config", version="1", authorizer=lambda token, request: {"sub": "x"})
    init(AUTH, mcp)


def test_jwt_authorization_needs_pyjwt_crypto(monkeypatch: pytest.MonkeyPatch) -> None:
    import jwt.algorithms

    monkeypatch.setattr(jwt.algorithms, "has_crypto", False)
    config = {**AUTH, "MCP_AUTH_JWT_JWKS_URL": "https://auth.example.com/jwks"}
    with pytest.raises(ImportError, match=r"'cryptography'.*'Flask-MCP\[jwt\]'"):
        init(config)


# -- a failed init_app -----------------------------------------------------------------------


def registered(app: Flask) -> dict[str, t.Any]:
    """Return what an extension may leave on ``app``: extensions, blueprints, routes, hooks."""
    return {
        "extensions": sorted(app.extensions),
        "blueprints": sorted(app.blueprints),
        "rules": sorted(rule.rule for rule in app.url_map.iter_rules()),
        "views": sorted(app.view_functions),
        "before_request": {k: len(v) for k, v in app.before_request_funcs.items()},
        "after_request": {k: len(v) for k, v in app.after_request_funcs.items()},
        "teardown": len(app.teardown_appcontext_funcs),
        "commands": sorted(app.cli.commands),
    }


def declare_view(mcp: MCP) -> None:
    mcp.ui_template("ui://board/view", "board.html")


@pytest.mark.parametrize(
    ("bad", "fix", "says"),
    [
        (
            {"MCP_HEALTH_LIVENESS_PATH": "/mcp"},
            {"MCP_HEALTH_LIVENESS_PATH": "/livez"},
            "is a path of the MCP endpoint",
        ),
        ({"MCP_EXPLORER": True}, {"MCP_EXPLORER": False}, "MCP_EXPLORER is on outside debug"),
        ({"MCP_SERVER_CARD": True}, {"MCP_SERVER_CARD": False}, "Server Card cannot be built"),
        ({}, declare_view, "not declared"),
    ],
    ids=["probe", "explorer", "server card", "view"],
)
def test_a_failed_init_app_leaves_nothing_behind(bad: t.Any, fix: t.Any, says: str) -> None:
    """A bad configuration refused by ``init_app`` left the app half registered (the endpoint's
    blueprint, ``app.extensions["mcp"]``): fixed and registered again, it was refused as
    "already registered". It leaves the app as it was now, and a second ``init_app`` serves."""
    mcp = MCP(name="no-reverse-dns", version="1")

    @mcp.tool(ui="ui://board/view")
    def board() -> str:
        return "board"

    if bad:
        declare_view(mcp)
    app = Flask(__name__)
    app.config.update(bad)
    before = registered(app)
    with pytest.raises(ValueError, match=says):
        mcp.init_app(app)
    assert registered(app) == before
    if callable(fix):
        fix(mcp)
    else:
        app.config.update(fix)
    mcp.init_app(app)
    assert app.extensions["mcp"] is mcp
    client = app.test_client()
    response = client.post(
        "/mcp",
        json=initialize_request(),
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 200, response.get_data(as_text=True)
