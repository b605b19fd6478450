"""Client ID Metadata Documents: a ``client_id`` that is an ``https://`` URL, fetched.

The MCP authorization spec (2025-11-25) lets a client use the URL of a JSON
document describing it as its ``client_id``. Fetching a URL a stranger chose is
a server-side request forgery risk, so the fetch:

- takes ``https://`` URLs only, with a path, no ``.`` or ``..`` path segment, no
  credentials, no fragment (the Client ID Metadata Document draft, section 3);
- resolves the host once and refuses private, loopback, link-local, multicast
  and reserved addresses (unless ``MCP_OAUTH_CLIENT_METADATA_ALLOW_PRIVATE``, for
  development), then connects to the address it checked (no DNS rebinding), with
  TLS still verified against the host name;
- follows no redirects, reads at most ``MCP_OAUTH_CLIENT_METADATA_MAX_BYTES`` and
  gives up after ``MCP_OAUTH_CLIENT_METADATA_TIMEOUT`` seconds in total, the host's
  resolution included;
- keeps the document as long as its ``Cache-Control``/``Expires`` allow (between
  :data:`MIN_CACHE_SECONDS` and :data:`MAX_CACHE_SECONDS`; ``no-store``: not kept),
  while fewer than ``MCP_OAUTH_MAX_CLIENTS`` are kept; past that, in this process's
  memory, :data:`OVERFLOW_CACHE_SIZE` at most, the least recently used dropped first;
- runs at most ``MCP_OAUTH_CLIENT_METADATA_MAX_FETCHES`` fetches at once per process,
  a name resolution that outlived its fetch's deadline counted until it ends: past
  that, :exc:`ClientDocumentsBusy` (anyone may name a slow host, each fetch holding
  a thread and a socket).

A document must name the URL it was fetched from as its ``client_id``, have a
``client_name``, list ``redirect_uris`` and be a public client
(``token_endpoint_auth_method`` ``none``).
"""

from __future__ import annotations

import collections
import email.utils
import ipaddress
import json
import re
import ssl
import threading
import time
import typing as t
from urllib.parse import unquote
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

from ...auth.deadline import Deadline
from ...protocol import netloc
from .clients import check_redirect_uri_shape
from .storage import Storage

#: The most documents a process keeps itself while the shared cache is full. Anyone may
#: fill that cache (a document costs a fetch within their address's rate limit, from as
#: many addresses as they have); the clients in use (a handful of applications, each one
#: URL for all its users) then stay here, and are not fetched again on every request,
#: each fetch counted against the address their users share.
OVERFLOW_CACHE_SIZE = 256

MIN_CACHE_SECONDS = 60.0
MAX_CACHE_SECONDS = 86400.0
DEFAULT_CACHE_SECONDS = 300.0


class ClientDocumentError(Exception):
    """The document cannot be used; the message says why (shown as ``invalid_client``)."""


class ClientDocumentsBusy(ClientDocumentError):
    """As many fetches as allowed run already; the message says to retry (shown as
    ``temporarily_unavailable``).

    :param retry_after: seconds after which to retry.
    """

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def is_document_client_id(client_id: str) -> bool:
    """Tell whether ``client_id`` has the shape of a metadata document URL."""
    try:
        parts = urlsplit(client_id)
    except ValueError:  # not a URL (an unclosed "[", say)
        return False
    return parts.scheme == "https" and bool(parts.netloc) and parts.path not in ("", "/")


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def cache_seconds(headers: t.Mapping[str, str], now: float) -> float:
    """Return how long a response may be kept, from ``Cache-Control`` and ``Expires``."""
    control = headers.get("cache-control", "").lower()
    if "no-store" in control or "no-cache" in control:
        return 0.0
    found = re.search(r"max-age\s*=\s*(\d+)", control)
    if found:
        seconds = float(found.group(1))
    elif headers.get("expires"):
        try:
            expires = email.utils.parsedate_to_datetime(headers["expires"]).timestamp()
        except (TypeError, ValueError):
            expires = now
        seconds = expires - now
    else:
        return DEFAULT_CACHE_SECONDS
    return min(MAX_CACHE_SECONDS, max(MIN_CACHE_SECONDS, seconds))


class ClientDocuments:
    """Fetch, check and cache Client ID Metadata Documents.

    :param storage: where documents are cached (shared by every worker).
    :param allow_private: fetch from private, loopback and link-local addresses.
    :param max_bytes: the largest document accepted.
    :param timeout: seconds for the whole fetch.
    :param verify: ``True``, or the path of a CA bundle to verify TLS with.
    :param max_cached: the most documents kept in ``storage`` (0: no bound); past it,
        a document is kept in this process, :data:`OVERFLOW_CACHE_SIZE` at most, the
        least recently used dropped first.
    :param max_fetches: the most fetches run at once (by all the app's requests in
        this process), a name resolution that outlived its fetch counted until it ends.
    """

    def __init__(
        self,
        storage: Storage,
        *,
        allow_private: bool = False,
        max_bytes: int = 5120,
        timeout: float = 5.0,
        verify: bool | str = True,
        max_cached: int = 10_000,
        max_fetches: int = 8,
    ) -> None:
        self.storage = storage
        self.allow_private = allow_private
        self.max_bytes = max_bytes
        self.timeout = timeout
        #: ``True`` (the system's CA certificates) or a context trusting the given bundle.
        self.verify: bool | ssl.SSLContext = (
            ssl.create_default_context(cafile=verify) if isinstance(verify, str) else verify
        )
        self.max_cached = max_cached
        self.max_fetches = max_fetches
        self._fetch_slots = threading.BoundedSemaphore(max_fetches)
        #: Documents kept here while ``storage`` holds ``max_cached``: the URL -> until
        #: when (``time.monotonic()``) and the document, the least recently used first.
        self._overflow: collections.OrderedDict[str, tuple[float, dict[str, t.Any]]] = (
            collections.OrderedDict()
        )
        self._overflow_lock = threading.Lock()

    def get(
        self, client_id: str, before_fetch: t.Callable[[], None] | None = None
    ) -> dict[str, t.Any]:
        """Return the checked metadata of ``client_id``, from the cache or fetched.

        :param before_fetch: called before a document that is not cached is fetched;
            it raises :exc:`ClientDocumentError` to refuse the fetch (a rate limit).
        :raises ClientDocumentError: the URL or the document is refused.
        """
        cached = self.storage.cached_client_document(client_id) or self._kept_here(client_id)
        if cached is not None:
            return cached
        if before_fetch is not None:
            before_fetch()
        document, keep = self.fetch(client_id)
        if keep <= 0:
            return document
        # anyone may have documents fetched (from as many addresses as they have):
        # the storage keeps as many as it keeps registered clients
        if not self.max_cached or self.storage.count_client_documents() < self.max_cached:
            self.storage.cache_client_document(client_id, document, keep)
        else:
            self._keep_here(client_id, document, keep)
        return document

    def _kept_here(self, client_id: str) -> dict[str, t.Any] | None:
        """Return the document kept in this process, now the most recently used."""
        with self._overflow_lock:
            found = self._overflow.get(client_id)
            if found is None:
                return None
            if found[0] <= time.monotonic():
                del self._overflow[client_id]
                return None
            self._overflow.move_to_end(client_id)
            return dict(found[1])

    def _keep_here(self, client_id: str, document: dict[str, t.Any], keep: float) -> None:
        """Keep a document in this process, dropping the least recently used past
        :data:`OVERFLOW_CACHE_SIZE`."""
        with self._overflow_lock:
            self._overflow[client_id] = (time.monotonic() + keep, dict(document))
            self._overflow.move_to_end(client_id)
            while len(self._overflow) > OVERFLOW_CACHE_SIZE:
                self._overflow.popitem(last=False)

    def _address(self, host: str, port: int, deadline: Deadline) -> str:
        """Return the address to fetch from: the first of ``host``'s, all of them public.

        The refusal is the same whether the host does not resolve or resolves to a
        private address, and names no address: anyone may send a ``client_id``, and
        would otherwise learn which internal names exist and their addresses. The
        resolution ends at the fetch's ``deadline``.
        """
        try:
            addresses = [str(info[4][0]) for info in deadline.resolve(host, port)]
        except TimeoutError:
            raise ClientDocumentError(
                f"the document took longer than {self.timeout:g} s to arrive"
            ) from None
        except (OSError, UnicodeError):
            addresses = []
        if not addresses or (
            not self.allow_private and not all(_public(address) for address in addresses)
        ):
            raise ClientDocumentError(
                f"the host {host!r} does not resolve to public addresses only (it does not "
                "resolve, or to a private, loopback or link-local address); client metadata "
                "documents must be on the public internet "
                "(MCP_OAUTH_CLIENT_METADATA_ALLOW_PRIVATE=True allows the others, for "
                "development)"
            )
        return addresses[0]

    def fetch(self, client_id: str) -> tuple[dict[str, t.Any], float]:
        """Download and check the document; return it and how long it may be cached.

        :raises ClientDocumentsBusy: ``max_fetches`` fetches run already.
        :raises ClientDocumentError: the URL or the document is refused.
        """
        parts = urlsplit(client_id)
        if not is_document_client_id(client_id) or parts.fragment:
            raise ClientDocumentError("a client metadata document URL is https:// with a path")
        if parts.username is not None or parts.password is not None:
            raise ClientDocumentError("a client metadata document URL has no credentials")
        if any(unquote(segment) in (".", "..") for segment in parts.path.split("/")):
            raise ClientDocumentError(
                "a client metadata document URL has no '.' or '..' path segment (dot segment): "
                "write the path of the document as it is"
            )
        host = parts.hostname or ""
        try:
            port = parts.port or 443
        except ValueError as exc:
            raise ClientDocumentError(f"the client_id URL has an invalid port ({exc})") from None
        if not self._fetch_slots.acquire(blocking=False):
            raise ClientDocumentsBusy(
                f"this server is fetching {self.max_fetches} client metadata documents "
                "already (MCP_OAUTH_CLIENT_METADATA_MAX_FETCHES): retry in a few seconds",
                retry_after=max(1, round(self.timeout)),
            )
        deadline = Deadline(time.monotonic() + self.timeout)
        try:
            return self._download(client_id, host, port, deadline)
        finally:
            # a resolution that outlived the deadline still holds a thread: its slot
            # comes back when it ends
            deadline.when_resolved(self._fetch_slots.release)

    def _download(
        self, client_id: str, host: str, port: int, deadline: Deadline
    ) -> tuple[dict[str, t.Any], float]:
        """Fetch ``client_id`` from ``host`` within ``deadline``; see :meth:`fetch`."""
        import httpx

        parts = urlsplit(client_id)
        started = deadline.at - self.timeout
        # httpx's timeout bounds each wait for a byte: a host that sends its TLS handshake
        # or its headers a byte at a time would hold the fetch (and the request that
        # made it) for as long as it goes on. The connection is cut at the deadline,
        # which the name's resolution does not pass either.
        address = self._address(host, port, deadline)
        pinned = urlunsplit(("https", netloc(address, port), parts.path, parts.query, ""))
        headers = {"Host": parts.netloc, "Accept": "application/json"}
        timeout = httpx.Timeout(self.timeout)
        body = bytearray()
        extensions = {"sni_hostname": host, "trace": deadline.trace}
        try:
            http = httpx.Client(verify=self.verify, timeout=timeout, follow_redirects=False)
            with (
                deadline,
                http,
                http.stream("GET", pinned, headers=headers, extensions=extensions) as response,
            ):
                if response.status_code != 200:
                    raise ClientDocumentError(
                        f"the document answered HTTP {response.status_code}, not 200"
                    )
                declared = response.headers.get("content-length")
                if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
                    raise ClientDocumentError(f"the document is larger than {self.max_bytes} bytes")
                for chunk in response.iter_bytes():
                    body.extend(chunk)
                    if len(body) > self.max_bytes:
                        raise ClientDocumentError(
                            f"the document is larger than {self.max_bytes} bytes"
                        )
                    if time.monotonic() - started > self.timeout:
                        raise ClientDocumentError(
                            f"the document took longer than {self.timeout:g} s to arrive"
                        )
                response_headers = {k.lower(): v for k, v in response.headers.items()}
        except httpx.TimeoutException:
            raise ClientDocumentError(
                f"the document took longer than {self.timeout:g} s to arrive"
            ) from None
        except httpx.HTTPError as exc:
            if deadline.cut:
                raise ClientDocumentError(
                    f"the document took longer than {self.timeout:g} s to arrive"
                ) from None
            raise ClientDocumentError(f"the document cannot be fetched: {exc}") from None
        if time.monotonic() - started > self.timeout:
            raise ClientDocumentError(f"the document took longer than {self.timeout:g} s to arrive")
        return self.check(client_id, bytes(body)), cache_seconds(response_headers, time.time())

    @staticmethod
    def check(client_id: str, body: bytes) -> dict[str, t.Any]:
        """Return the document in ``body`` if it describes ``client_id``.

        :raises ClientDocumentError: it is not JSON, names another client, has no
            usable redirect URIs, or asks for client authentication.
        """
        try:
            document = json.loads(body)
        except ValueError:
            raise ClientDocumentError("the document is not JSON") from None
        if not isinstance(document, dict):
            raise ClientDocumentError("the document is not a JSON object")
        if document.get("client_id") != client_id:
            raise ClientDocumentError("the document's client_id is not the URL it was fetched from")
        if not isinstance(document.get("client_name"), str) or not document["client_name"]:
            raise ClientDocumentError("the document has no client_name")
        uris = document.get("redirect_uris")
        if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
            raise ClientDocumentError("the document lists no redirect_uris")
        for uri in uris:
            problem = check_redirect_uri_shape(uri)
            if problem:
                raise ClientDocumentError(problem)
        method = document.get("token_endpoint_auth_method", "none")
        if method != "none":
            raise ClientDocumentError(
                "a client metadata document describes a public client: "
                "token_endpoint_auth_method must be 'none'"
            )
        if "client_secret" in document:
            raise ClientDocumentError("a client metadata document must not hold a client_secret")
        return {**document, "token_endpoint_auth_method": "none"}


__all__ = [
    "DEFAULT_CACHE_SECONDS",
    "MAX_CACHE_SECONDS",
    "MIN_CACHE_SECONDS",
    "OVERFLOW_CACHE_SIZE",
    "ClientDocumentError",
    "ClientDocuments",
    "ClientDocumentsBusy",
    "cache_seconds",
    "is_document_client_id",
]
