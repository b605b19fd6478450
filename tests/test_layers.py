"""The package's layers hold, and the public import paths of the docs keep working."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

import flask_mcp

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_no_cycle_and_no_upward_import() -> None:
    """scripts/import_graph.py --check: TYPE_CHECKING imports count too."""
    script = ROOT / "scripts" / "import_graph.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cycles, all kinds (TYPE_CHECKING included): 0" in done.stdout
    assert "upward imports: 0" in done.stdout


def test_the_public_paths_of_the_docs_work() -> None:
    from flask_mcp import mrtr
    from flask_mcp.auth import AuthError
    from flask_mcp.auth import AuthInfo
    from flask_mcp.auth.jwt_authorizer import JWTAuthorizer
    from flask_mcp.jwt_auth import JWTAuthorizer as OldJWTAuthorizer
    from flask_mcp.server import mrtr as server_mrtr
    from flask_mcp.transport.auth import current_auth
    from flask_mcp.transport.auth import require_scopes

    assert OldJWTAuthorizer is JWTAuthorizer
    assert mrtr.elicitation is server_mrtr.elicitation
    assert flask_mcp.current_auth is current_auth
    assert flask_mcp.require_scopes is require_scopes
    assert (AuthError, AuthInfo) == (flask_mcp.AuthError, flask_mcp.AuthInfo)
    for name in flask_mcp.__all__:
        assert getattr(flask_mcp, name) is not None


@pytest.mark.parametrize("name", ["current_auth", "require_scopes", "current_authenticator"])
def test_moved_auth_names_warn_and_still_work(name: str) -> None:
    import flask_mcp.auth
    from flask_mcp.transport import auth as transport_auth

    with pytest.deprecated_call(match=f"flask_mcp.auth.{name} is deprecated"):
        found = getattr(flask_mcp.auth, name)
    assert found is getattr(transport_auth, name)
    with pytest.raises(AttributeError):
        flask_mcp.auth.no_such_name  # noqa: B018
