"""Just enough asyncio HTTP/1.1 for thousands of concurrent MCP sessions and GET streams."""

from __future__ import annotations

import asyncio
import json
import typing as t

from .client import ACCEPT
from .client import CLIENT_INFO
from .client import HANDSHAKE_VERSION


class Connection:
    """One keep-alive HTTP/1.1 connection to the server."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, port: int
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.host = host
        self.port = port

    @classmethod
    async def open(cls, host: str, port: int) -> Connection:
        """Connect to ``host:port``."""
        reader, writer = await asyncio.open_connection(host, port, limit=1 << 22)
        return cls(reader, writer, host, port)

    async def send(
        self, method: str, path: str, headers: t.Mapping[str, str], body: bytes = b""
    ) -> None:
        """Write one request."""
        lines = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        if body or method == "POST":
            lines.append(f"Content-Length: {len(body)}")
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await self.writer.drain()

    async def read_head(self) -> tuple[int, dict[str, str]]:
        """Read a status line and headers; return the status and lower-cased headers."""
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        return status, headers

    async def read_body(self, headers: t.Mapping[str, str]) -> bytes:
        """Read a body framed by Content-Length or chunked encoding."""
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readuntil(b"\r\n")
                    return b"".join(parts)
                parts.append(await self.reader.readexactly(size + 2))
                parts[-1] = parts[-1][:-2]
        length = int(headers.get("content-length", "0"))
        return await self.reader.readexactly(length) if length else b""

    async def post(
        self, path: str, message: dict[str, t.Any], headers: t.Mapping[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        """POST a JSON-RPC message and read the whole answer."""
        await self.send(
            "POST",
            path,
            {"Content-Type": "application/json", "Accept": ACCEPT, **headers},
            json.dumps(message).encode(),
        )
        status, head = await self.read_head()
        return status, head, await self.read_body(head)

    def close(self) -> None:
        """Close the connection."""
        self.writer.close()


async def handshake(conn: Connection, path: str) -> str:
    """Open a session on ``conn``; return its id.

    :raises RuntimeError: the handshake failed.
    """
    status, head, body = await conn.post(
        path,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": CLIENT_INFO,
            },
        },
        {},
    )
    session_id = head.get("mcp-session-id")
    if status != 200 or not session_id:
        raise RuntimeError(f"initialize: HTTP {status} {body[:200]!r}")
    headers = {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": HANDSHAKE_VERSION}
    status, _, body = await conn.post(
        path, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers
    )
    if status != 202:
        raise RuntimeError(f"notifications/initialized: HTTP {status} {body[:200]!r}")
    return session_id
