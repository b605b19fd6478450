"""The official client's OAuth token storage, kept in memory, for the auth end-to-end tests."""

from __future__ import annotations

from mcp.shared.auth import OAuthClientInformationFull
from mcp.shared.auth import OAuthToken


class MemoryTokenStorage:
    """Token storage for the SDK's OAuth providers (its ``TokenStorage`` protocol)."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info
