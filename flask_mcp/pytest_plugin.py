"""The ``mcp_client`` pytest fixture, registered through the ``pytest11`` entry point.

Installing Flask-MCP makes it available in every test suite; like pytest-flask's
``client``, it uses the ``app`` fixture the project defines:

.. code-block:: python

    # conftest.py
    @pytest.fixture
    def app():
        app = create_app()  # calls mcp.init_app(app)
        app.config["TESTING"] = True
        return app

    # test_tools.py
    def test_add(mcp_client):
        assert mcp_client.call_tool("add", {"a": 1, "b": 2})["structuredContent"] == {"result": 3}

    @pytest.mark.mcp_client(protocol_version="2026-07-28", elicitation=decline)
    def test_declined(mcp_client): ...

    @pytest.mark.parametrize("mcp_client", ["2025-11-25", "2026-07-28"], indirect=True)
    def test_both_eras(mcp_client): ...

Override the ``mcp_protocol_version`` fixture (for example with
``params=[...]``) to choose the version of every ``mcp_client`` at once.
Disable the plugin with ``-p no:flask_mcp``.
"""

from __future__ import annotations

import typing as t

import pytest

if t.TYPE_CHECKING:
    from collections.abc import Iterator

    from .testing import MCPTestClient

MARKER = (
    "mcp_client(protocol_version=None, **options): keyword arguments for the MCPTestClient "
    "of the mcp_client fixture (protocol_version, sampling, elicitation, roots, capabilities, "
    "headers, log_level...); the marker closest to the test wins"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)


@pytest.fixture
def mcp_protocol_version() -> str | None:
    """The protocol version of :func:`mcp_client` (``None``: the newest handshake-era one).

    Override it in a ``conftest.py``, for example parametrized over both eras.
    """
    return None


@pytest.fixture
def mcp_client(
    request: pytest.FixtureRequest, mcp_protocol_version: str | None
) -> Iterator[MCPTestClient]:
    """An initialized :class:`~flask_mcp.testing.MCPTestClient` for the ``app`` fixture's app.

    Its options come from ``@pytest.mark.mcp_client(...)`` and from an
    indirect parametrization (a version string or a dict of options), which
    wins; the session ends after the test.
    """
    from .testing import MCPTestClient

    try:
        app = request.getfixturevalue("app")
    except pytest.FixtureLookupError:
        pytest.fail(
            "The mcp_client fixture needs an `app` fixture that returns your Flask app "
            "(with mcp.init_app(app) called); define one in conftest.py.",
            pytrace=False,
        )
    options: dict[str, t.Any] = {}
    if mcp_protocol_version is not None:
        options["protocol_version"] = mcp_protocol_version
    for marker in reversed(list(request.node.iter_markers("mcp_client"))):
        options.update(_marker_options(marker))
    param = getattr(request, "param", None)
    if isinstance(param, str):
        options["protocol_version"] = param
    elif isinstance(param, dict):
        options.update(param)
    elif param is not None:
        pytest.fail(
            f"Parametrize mcp_client with version strings or dicts of options, not {param!r}.",
            pytrace=False,
        )
    with MCPTestClient(app, **options) as client:
        yield client


def _marker_options(marker: pytest.Mark) -> dict[str, t.Any]:
    if len(marker.args) > 1 or (marker.args and not isinstance(marker.args[0], str)):
        pytest.fail(
            "Use @pytest.mark.mcp_client(protocol_version='...', **options); the only "
            "positional argument it takes is the version.",
            pytrace=False,
        )
    options = dict(marker.kwargs)
    if marker.args:
        options["protocol_version"] = marker.args[0]
    return options
