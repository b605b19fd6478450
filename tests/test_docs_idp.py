"""The worked authorization setups of docs/authorization.md accept their provider's tokens.

Each setup's code block runs on a fresh app; the JWKS fetch is answered with a local key
(only for the URL the block configures), and tokens are minted with the claims that
provider puts in its access tokens: Keycloak's ``aud`` list with ``account``, Auth0's
issuer with a trailing slash and ``aud`` list with ``userinfo``, Entra ID's v2 issuer,
client-id audience and ``scp`` claim. A token for another audience must be refused.
"""

from __future__ import annotations

import re
import typing as t
from pathlib import Path

import pytest
from flask import Flask
from jwt_keys import Keys

from flask_mcp import MCP
from flask_mcp import MCPError
from flask_mcp.auth.jwt_authorizer import JWKSCache
from flask_mcp.testing import MCPTestClient

DOC = (Path(__file__).resolve().parent.parent / "docs" / "authorization.md").read_text()
RESOURCE = "https://mcp.example.com/mcp"
TENANT = "11111111-2222-3333-4444-555555555555"
API_CLIENT_ID = "66666666-7777-8888-9999-000000000000"

PROVIDERS: dict[str, dict[str, t.Any]] = {
    "Keycloak": {
        "jwks": "https://keycloak.example.com/realms/mcp/protocol/openid-connect/certs",
        "claims": {
            "iss": "https://keycloak.example.com/realms/mcp",
            "aud": [RESOURCE, "account"],
            "scope": "openid profile notes:read notes:write",
            "azp": "an-mcp-client",
            "typ": "Bearer",
        },
        "write_scope": "notes:write",
    },
    "Auth0": {
        "jwks": "https://example-tenant.us.auth0.com/.well-known/jwks.json",
        "claims": {
            "iss": "https://example-tenant.us.auth0.com/",
            "aud": [RESOURCE, "https://example-tenant.us.auth0.com/userinfo"],
            "scope": "openid notes:read notes:write",
            "azp": "an-mcp-client",
        },
        "write_scope": "notes:write",
    },
    "Microsoft Entra ID": {
        "jwks": f"https://login.microsoftonline.com/{TENANT}/discovery/v2.0/keys",
        "claims": {
            "iss": f"https://login.microsoftonline.com/{TENANT}/v2.0",
            "aud": API_CLIENT_ID,
            "scp": "Notes.Read Notes.Write",
            "scope": None,
            "ver": "2.0",
            "tid": TENANT,
        },
        "write_scope": "Notes.Write",
    },
}


def setup_block(provider: str) -> str:
    """Return the python block of the ``### provider`` section of the page."""
    section = DOC.split(f"### {provider}\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1, f"the {provider} section should hold one python block"
    return blocks[0]


def token(keys: Keys, claims: dict[str, t.Any], **changes: t.Any) -> str:
    merged = {k: v for k, v in {**claims, **changes}.items() if v is not None}
    iss, aud = merged.pop("iss"), merged.pop("aud")
    scope = merged.pop("scope", "")
    return keys.mint(issuer=iss, audience=aud, scope=scope, subject="user-1", **merged)


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_worked_setup_accepts_the_providers_tokens(
    provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = PROVIDERS[provider]
    keys = Keys()
    fetched: list[str] = []

    def fetch(cache: JWKSCache) -> list[dict[str, t.Any]]:
        fetched.append(cache.url)
        if cache.url != spec["jwks"]:
            raise OSError(f"no JWKS at {cache.url}")
        return [keys.jwk()]

    monkeypatch.setattr(JWKSCache, "fetch", fetch)
    namespace: dict[str, t.Any] = {"Flask": Flask, "MCP": MCP}
    namespace["app"] = app = Flask(__name__)
    namespace["mcp"] = mcp = MCP(name="notes", version="1.0.0")
    exec(compile(setup_block(provider), f"authorization.md ({provider})", "exec"), namespace)
    if "add_note" not in namespace:

        @mcp.tool(scopes=[spec["write_scope"]])
        def add_note(name: str, text: str) -> str:
            return f"Saved {name}."

    def client(bearer: str) -> MCPTestClient:
        return MCPTestClient(app, headers={"Authorization": f"Bearer {bearer}"})

    good = token(keys, spec["claims"])
    with client(good) as mcp_client:
        result = mcp_client.call_tool("add_note", {"name": "a", "text": "b"})
    assert result["content"][0]["text"] == "Saved a."
    assert fetched and set(fetched) == {spec["jwks"]}

    other_audience = token(keys, spec["claims"], aud="https://other.example.com/mcp")
    with pytest.raises(MCPError) as refused:
        client(other_audience).initialize()
    assert refused.value.http_status == 401

    read_only = {"scp": "Notes.Read"} if "scp" in spec["claims"] else {"scope": "notes:read"}
    with (
        client(token(keys, spec["claims"], **read_only)) as mcp_client,
        pytest.raises(MCPError) as forbidden,
    ):
        mcp_client.call_tool("add_note", {"name": "a", "text": "b"})
    assert forbidden.value.http_status == 403
