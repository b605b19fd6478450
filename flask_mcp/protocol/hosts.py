"""Hosts: which are this machine (the one rule of the Host and Origin checks and auth URLs),
how a URL writes one, and which addresses are one client's."""

from __future__ import annotations

import functools
import ipaddress
import typing as t

from werkzeug.wsgi import get_host

from ..errors import MCPHTTPError


@functools.lru_cache(maxsize=1024)
def is_local_host(host: str | None) -> bool:
    """Tell whether ``host`` names this machine: ``localhost``, ``*.localhost``, a loopback IP.

    The one rule for the Host and Origin checks and for the ``http://`` URLs
    allowed in authorization settings. A name may be bracketed (``[::1]``) and
    an IPv6 address may carry a zone (``fe80::1%eth0``); case is ignored.
    ``*.localhost`` always resolves to the loopback interface (RFC 6761).
    """
    if not host:
        return False
    name = host.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _split_host(value: str) -> str:
    """Return the host part of a ``Host`` header value (no port, brackets kept off)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


@functools.lru_cache(maxsize=1024)
def _is_loopback(address: str | None) -> bool:
    if not address:
        return False
    try:
        return ipaddress.ip_address(address.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


@functools.lru_cache(maxsize=1024)
def host_allowed(
    host: str | None, remote_addr: str | None, allowed: tuple[str, ...] | None
) -> bool:
    """Tell whether a request's ``Host`` may be served (``MCP_ALLOWED_HOSTS``).

    With no allow-list, a connection from a loopback address must name a local host
    (a DNS rebinding attack names another); with one, the host (or ``host:port``) must
    be listed, or the list hold ``*``. The verdict is cached: a client sends the same
    values on every request.
    """
    if allowed is not None and "*" in allowed:
        return True
    raw = (host or "").strip().lower()
    name = _split_host(raw)
    if allowed is None:
        return not _is_loopback(remote_addr) or is_local_host(name)
    return raw in allowed or name in allowed


def check_host(host: str | None, remote_addr: str | None, allowed: tuple[str, ...] | None) -> None:
    """Refuse a ``Host`` header that could come from DNS rebinding (:func:`host_allowed`).

    A route checks its request with :func:`check_request_host`, which reads the
    ``Host`` from the request as every other route does.

    :raises MCPHTTPError: 421 Misdirected Request.
    """
    if not host_allowed(host, remote_addr, allowed):
        raise _misdirected(host)


def check_request_host(environ: t.Mapping[str, t.Any], allowed: tuple[str, ...] | None) -> None:
    """Refuse a WSGI request whose ``Host`` could come from DNS rebinding (:func:`host_allowed`).

    The one check of the MCP endpoint and of every route served beside it (the
    Server Card, the explorer, the probes, ``/metrics``, the OAuth metadata and
    authorization server), so that they all decide alike. The host checked is the
    ``Host`` header as the app received it, port included (behind
    ``ProxyFix(x_host=1)`` the forwarded one): not Werkzeug's ``request.host``,
    which drops a default port (``:443`` of an ``https`` request, after
    ``ProxyFix(x_proto=1)``) and makes a host with characters it refuses empty. A
    request without one (HTTP/1.0) is checked under the server's address
    (``SERVER_NAME:SERVER_PORT``), as Werkzeug gives it.

    :raises MCPHTTPError: 421 Misdirected Request.
    """
    host = environ.get("HTTP_HOST") or get_host(environ)  # type: ignore[arg-type]
    if not host_allowed(host, environ.get("REMOTE_ADDR"), allowed):
        raise _misdirected(host)


def _misdirected(host: str | None) -> MCPHTTPError:
    return MCPHTTPError(
        421,
        f"Host {host!r} is not allowed. If this server is reached under that name, add it to "
        "MCP_ALLOWED_HOSTS (use '*' to accept any host behind a trusted proxy).",
    )


def netloc(host: str, port: int | None = None) -> str:
    """Return ``host[:port]`` as a URL writes it: an IPv6 address in brackets.

    :param host: a host name or an IP address, without brackets (as
        :attr:`urllib.parse.SplitResult.hostname` gives it).
    :param port: the port, or ``None`` to write none.
    """
    literal = f"[{host}]" if ":" in host else host
    return literal if port is None else f"{literal}:{port}"


@functools.lru_cache(maxsize=4096)
def client_network(address: str | None) -> str:
    """Return what a client's address says of who it is, for the per-client bounds.

    An IPv4 address is one client. An IPv6 address is not: the smallest network a
    subscriber gets is a /64 (RFC 6177), whose 2**64 addresses one client may take in
    turn, so an IPv6 address stands for its /64 (``2001:db8:1:2::/64``). An
    IPv4-mapped IPv6 address is its IPv4 address. Anything else is kept as it is.

    :param address: ``REMOTE_ADDR`` (which ``ProxyFix`` sets), or ``None`` (none known).
    """
    if not address:
        return "local"
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


__all__ = [
    "check_host",
    "check_request_host",
    "client_network",
    "host_allowed",
    "is_local_host",
    "netloc",
]
