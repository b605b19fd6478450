"""Hosts: which are this machine (the one rule of the Host and Origin checks and auth URLs),
and how a URL writes one."""

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


__all__ = ["is_local_host", "netloc"]
