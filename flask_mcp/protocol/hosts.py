"""Hosts: which are this machine (the one rule of the Host and Origin checks and auth URLs),
how a URL writes one, and which addresses are one client's."""

from __future__ import annotations

import functools
import ipaddress


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


__all__ = ["client_network", "is_local_host", "netloc"]
