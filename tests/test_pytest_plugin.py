"""The ``mcp_client`` fixture that installing Flask-MCP adds to every pytest run."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest
from flask import Flask
from flask_mcp import MCP, Context

mcp = MCP(name="plugged", version="1.0")

@mcp.tool()
def add(a: int, b: int) -> int:
    return a + b

@mcp.tool()
def ask(ctx: Context) -> str:
    return ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})[
        "content"]["name"]

@pytest.fixture(scope="module")
def app():
    app = Flask("plugged")
    app.config["SECRET_KEY"] = "s"
    mcp.init_app(app)
    return app
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    return pytester


def test_registered_through_the_pytest11_entry_point() -> None:
    plugins = {e.name: e.value for e in entry_points(group="pytest11")}
    assert plugins.get("flask_mcp") == "flask_mcp.pytest_plugin", (
        "reinstall the package (pip install -e .) to register the entry point"
    )


def test_the_fixture_uses_the_app_fixture(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        def test_call(mcp_client, app):
            assert mcp_client.app is app
            assert mcp_client.session_id  # initialized: a handshake-era session by default
            assert mcp_client.call_tool("add", {"a": 1, "b": 2})["structuredContent"] == {
                "result": 3
            }

        def test_session_ended(app):
            assert app.extensions["mcp"].stats(app)["sessions"] == 0
        """
    )
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_the_marker_passes_options(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import pytest

        pytestmark = pytest.mark.mcp_client(elicitation=lambda p: {"action": "decline"})

        @pytest.mark.mcp_client(
            protocol_version="2026-07-28",
            elicitation=lambda params: {"action": "accept", "content": {"name": "Ada"}},
        )
        def test_stateless(mcp_client):
            assert mcp_client.stateless and mcp_client.session_id is None
            assert mcp_client.call_tool("ask")["content"][0]["text"] == "Ada"

        @pytest.mark.mcp_client("2026-07-28")
        def test_module_marker_applies_too(mcp_client):
            assert mcp_client.stateless
            assert mcp_client.capabilities == {"elicitation": {"form": {}, "url": {}}}
        """
    )
    project.runpytest("-p", "no:cacheprovider", "--strict-markers").assert_outcomes(passed=2)


def test_both_eras_by_parametrization(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("mcp_client", ["2025-11-25", "2026-07-28"], indirect=True)
        def test_add(mcp_client):
            assert mcp_client.call_tool("add", {"a": 2, "b": 2})["structuredContent"] == {
                "result": 4
            }

        @pytest.mark.parametrize(
            "mcp_client", [{"protocol_version": "2026-07-28", "log_level": "error"}], indirect=True
        )
        def test_options(mcp_client):
            assert mcp_client.stateless and mcp_client.log_level == "error"
        """
    )
    result = project.runpytest("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_add?2025-11-25? PASSED*", "*test_add?2026-07-28? PASSED*"])


def test_overriding_the_version_fixture(project: pytest.Pytester) -> None:
    project.makeconftest(
        CONFTEST
        + """
@pytest.fixture(params=["2025-11-25", "2026-07-28"])
def mcp_protocol_version(request):
    return request.param
"""
    )
    project.makepyfile(
        """
        def test_version(mcp_client, mcp_protocol_version):
            assert mcp_client.protocol_version == mcp_protocol_version
            assert mcp_client.call_tool("add", {"a": 1, "b": 1})["structuredContent"] == {
                "result": 2
            }
        """
    )
    project.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_without_an_app_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_it(mcp_client):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*mcp_client fixture needs an `app` fixture*"])


def test_an_app_without_init_app(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from flask import Flask

        @pytest.fixture
        def app():
            return Flask("bare")

        def test_it(mcp_client):
            pass
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*did you call init_app?*"])


def test_the_marker_is_documented_and_the_plugin_can_be_disabled(
    pytester: pytest.Pytester,
) -> None:
    pytester.runpytest("--markers").stdout.fnmatch_lines(["@pytest.mark.mcp_client(*"])
    pytester.makepyfile("def test_it(mcp_client):\n    pass\n")
    result = pytester.runpytest("-p", "no:flask_mcp", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'mcp_client' not found*"])
