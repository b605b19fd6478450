"""The benchmarks measure the server they started, or stop saying which one did not start.

A port from :func:`benchmarks.servers.free_port` stays closed until its server binds it,
so two servers started together could be offered the same one: the second failed to
bind and exited while the first answered on the shared port, uvicorn's readiness (the
port accepts, the process exists) passed, and the second server's rows measured the
first (its CPU and peak RSS read 0).
"""

from __future__ import annotations

import dataclasses
import sys
import typing as t
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import servers  # noqa: E402
from benchmarks import targets  # noqa: E402


class OfferingPorts:
    """A stand-in for ``socket.socket`` whose kernel offers the ports given, in order."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports

    def __call__(self) -> OfferingPorts:
        return self

    def __enter__(self) -> OfferingPorts:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def bind(self, address: tuple[str, int]) -> None:
        pass

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self.ports.pop(0))


def test_a_port_is_handed_out_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(servers, "_handed_out", set())
    monkeypatch.setattr(servers.socket, "socket", OfferingPorts([41001, 41001, 41002]))
    assert [servers.free_port(), servers.free_port()] == [41001, 41002]


@pytest.mark.skipif(not targets.sdk_available(), reason="needs the mcp SDK and uvicorn")
def test_a_server_that_lost_its_port_stops_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    port = servers.free_port()
    monkeypatch.setattr(servers, "free_port", lambda: port)  # as if offered twice
    first = targets.sdk("json")
    second = dataclasses.replace(first, name="sdk/json-second")
    started: list[t.Any] = []
    try:
        with pytest.raises(RuntimeError, match=r"sdk/json(-second)? exited(.|\n)*already in use"):
            started = servers.start_all([first, second], core=None, timeout=20)
    finally:  # both returned as started: the test fails, and stops them
        for server in started:
            server.stop()
