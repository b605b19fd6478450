"""OAuth clients: the model Authlib checks requests against, and Dynamic Client Registration.

A client is known in one of two ways. Dynamic Client Registration (RFC 7591)
stores its metadata under a generated ``client_id``; a Client ID Metadata
Document (:mod:`.client_documents`) is fetched from the ``https://`` URL that is
the ``client_id`` itself. Either way Authlib sees a :class:`Client`.

Redirect URIs match exactly, character for character, with one exception that
RFC 8252 (section 7.3) asks for: a native app's loopback redirect
(``http://127.0.0.1/...`` or ``http://[::1]/...``) matches on any port, since the
app listens on a port it gets from the system at run time.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
import typing as t
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749 import ClientMixin
from authlib.oauth2.rfc6749 import scope_to_list
from authlib.oauth2.rfc7591 import ClientMetadataClaims
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7591.errors import InvalidClientMetadataError
from authlib.oauth2.rfc7591.errors import InvalidRedirectURIError
from werkzeug.exceptions import BadRequest
from werkzeug.exceptions import UnsupportedMediaType

from ...protocol import netloc
from .grants import error_description
from .storage import Storage

#: The loopback hosts of RFC 8252 section 7.3 (``localhost`` is NOT one: section 8.3).
LOOPBACK_HOSTS = ("127.0.0.1", "[::1]")
#: How long a dynamically registered client is kept (renewed by no use; clients re-register).
CLIENT_LIFETIME = 180 * 86400.0
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")


def secret_digest(secret: str) -> str:
    """Return what is stored of a client secret (its SHA-256; secrets are 256 random bits)."""
    return hashlib.sha256(secret.encode()).hexdigest()


#: A loopback ``netloc``: the host and an optional port, nothing else (no user info).
_LOOPBACK_NETLOC = re.compile(f"({'|'.join(map(re.escape, LOOPBACK_HOSTS))})(?::([0-9]{{1,5}}))?")


def _loopback_host(netloc: str) -> str | None:
    """Return the loopback host of ``netloc``, or ``None`` if it is anything else.

    The whole ``netloc`` must match: ``127.0.0.1:1@evil.example`` is a URL of
    ``evil.example`` (user info ``127.0.0.1:1``), not of the loopback host; and its
    port must be one (at most 65535: no redirect can be made to another).
    """
    found = _LOOPBACK_NETLOC.fullmatch(netloc)
    if found is None or int(found.group(2) or 0) > 65535:
        return None
    return found.group(1)


def redirect_uri_matches(registered: str, requested: str) -> bool:
    """Tell whether ``requested`` may be used for a client that registered ``registered``."""
    if registered == requested:
        return True
    try:
        want, got = urlsplit(registered), urlsplit(requested)
    except ValueError:  # not a URL (an unclosed "[", say): it matches nothing
        return False
    if want.scheme != "http" or got.scheme != "http":
        return False
    host = _loopback_host(want.netloc)
    if host is None or _loopback_host(got.netloc) != host:
        return False
    return (want.path, want.query, want.fragment) == (got.path, got.query, got.fragment)


def redirect_host(uri: str) -> str:
    """Return the host the browser is sent to by ``uri``, as the consent page shows it.

    The host name and port, never the user info before an ``@`` (the MCP authorization
    spec: the server MUST clearly display the redirect URI's host name); the whole URI
    when it has no host (a private-use scheme such as ``com.example.app:/cb``).
    """
    try:
        parts = urlsplit(uri)
        host, port = parts.hostname, parts.port
    except ValueError:  # not a URL (an unclosed "[", a port out of range): show it all
        return uri
    if not host:
        return uri
    return netloc(host, port)


#: A character no URI holds (RFC 3986, section 2): a browser and Python read a URI that
#: has one apart (``https://evil.example\\.trusted.example/`` is a URL of ``evil.example``
#: to a browser, of ``evil.example\\.trusted.example`` to :func:`~urllib.parse.urlsplit`).
_NOT_IN_URI = re.compile(r"[^A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]")


def check_redirect_uri_shape(uri: str) -> str | None:
    """Return why ``uri`` may not be registered, or ``None`` when it may.

    https URIs, loopback http URIs and private-use schemes (``com.example.app:/cb``,
    RFC 8252 section 7.1) are accepted; http on other hosts, fragments, user info
    (``https://trusted.example@evil.example/``) and characters no URI holds (a
    backslash, a space, a control character, non-ASCII: percent-encode them) are not.
    """
    found = _NOT_IN_URI.search(uri)
    if found is not None:
        return (
            f"{uri!r} holds {found.group()!r}, which no URI holds (RFC 3986): browsers "
            "read such a URI differently (a backslash as '/'); percent-encode it"
        )
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 (raises ValueError past 65535: no redirect goes there)
    except ValueError as exc:
        return f"{uri!r} is not a valid URI ({exc})"
    if not parts.scheme or parts.fragment:
        return f"{uri!r} is not an absolute URI without a fragment"
    if "@" in parts.netloc:
        # https://trusted.example@evil.example/cb goes to evil.example: user info only
        # serves to make the consent page's "sends you back to" read as another host
        return f"{uri!r} holds user info (user@host): a redirect URI names its host alone"
    if parts.scheme == "http":
        host = parts.hostname or ""
        if host not in ("127.0.0.1", "::1", "localhost"):
            return f"{uri!r} uses http:// on a host that is not loopback: use https://"
    if parts.scheme in ("javascript", "data", "file", "vbscript"):
        return f"{uri!r} uses a forbidden scheme"
    return None


class Client(ClientMixin):  # type: ignore[misc]
    """A client as Authlib sees it, made from its stored metadata.

    :param metadata: RFC 7591 client metadata with ``client_id`` (and
        ``client_secret`` for a confidential client).
    """

    def __init__(self, metadata: dict[str, t.Any]) -> None:
        self.metadata = metadata
        self.client_id: str = metadata["client_id"]
        #: The name shown on the consent page.
        self.client_name: str = str(metadata.get("client_name") or self.client_id)
        self.redirect_uris: list[str] = list(metadata.get("redirect_uris") or ())
        self.auth_method: str = metadata.get("token_endpoint_auth_method") or "none"

    def get_client_id(self) -> str:
        """Return the ``client_id``."""
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        """Return the only registered redirect URI; with several, the request must name one."""
        return self.redirect_uris[0] if len(self.redirect_uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        """Return the requested scopes: the user's consent, not registration, limits them.

        The ``scope`` a client registered is not a ceiling: MCP clients register
        with the scopes of their first request and ask for more on a step-up
        (403 ``insufficient_scope``) without registering again.
        """
        return " ".join(dict.fromkeys(scope_to_list(scope or "") or ()))

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        """Exact match, or a loopback redirect on another port (RFC 8252)."""
        return any(redirect_uri_matches(uri, redirect_uri) for uri in self.redirect_uris)

    def check_client_secret(self, client_secret: str) -> bool:
        """Compare the secret's SHA-256 with the one stored, in constant time."""
        stored = self.metadata.get("client_secret_sha256")
        if not isinstance(stored, str) or not isinstance(client_secret, str):
            return False
        return hmac.compare_digest(stored, secret_digest(client_secret))

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        """Accept the method the client registered (``none`` for a public client)."""
        return method == self.auth_method

    def check_response_type(self, response_type: str) -> bool:
        """Only ``code``."""
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        """``authorization_code`` and ``refresh_token``, if the client registered them."""
        grants = self.metadata.get("grant_types") or ["authorization_code", "refresh_token"]
        return grant_type in grants and grant_type in ("authorization_code", "refresh_token")


#: The members RFC 7591 (section 2) defines as strings, beyond those checked one by one.
STRING_MEMBERS = (
    "token_endpoint_auth_method",
    "scope",
    "client_uri",
    "logo_uri",
    "tos_uri",
    "policy_uri",
    "jwks_uri",
)
#: The members RFC 7591 defines as arrays of strings, beyond ``redirect_uris`` and ``contacts``.
STRING_ARRAY_MEMBERS = ("grant_types", "response_types")


class MCPClientMetadataClaims(ClientMetadataClaims):  # type: ignore[misc]
    """RFC 7591 metadata with the checks an MCP authorization server adds."""

    def validate(self, now: t.Any = None, leeway: int = 0) -> None:
        """Check the JSON type of each member first: Authlib's checks assume it.

        :raises InvalidClientMetadataError: a member is not of the type RFC 7591 gives it.
        """
        for name in STRING_MEMBERS:
            self._validate_string(name)
        for name in STRING_ARRAY_MEMBERS:
            self._validate_string_array(name)
        if "jwks" in self and not isinstance(self["jwks"], dict):
            raise InvalidClientMetadataError("jwks must be a JSON object, a JWK Set (RFC 7591)")
        super().validate(now, leeway)

    def validate_redirect_uris(self) -> None:
        """Require redirect URIs, each https, loopback http or a private-use scheme."""
        uris = self.get("redirect_uris")
        if not uris or not isinstance(uris, list):
            raise InvalidRedirectURIError("redirect_uris is required (a list of URIs)")
        for uri in uris:
            problem = check_redirect_uri_shape(str(uri))
            if problem:
                raise InvalidRedirectURIError(error_description(problem))

    def validate_client_name(self) -> None:
        """A string (RFC 7591): the consent page shows it to the user."""
        self._validate_string("client_name")

    def validate_software_id(self) -> None:
        """A string (RFC 7591)."""
        self._validate_string("software_id")

    def validate_software_version(self) -> None:
        """A string (RFC 7591)."""
        self._validate_string("software_version")

    def validate_contacts(self) -> None:
        """An array of strings (RFC 7591)."""
        self._validate_string_array("contacts")

    def _validate_string(self, name: str) -> None:
        if name in self and not isinstance(self[name], str):
            raise InvalidClientMetadataError(f"{name} must be a string (RFC 7591)")

    def _validate_string_array(self, name: str) -> None:
        value = self.get(name)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            raise InvalidClientMetadataError(f"{name} must be an array of strings (RFC 7591)")

    def validate_token_endpoint_auth_method(self) -> None:
        """Default to ``none`` (a public client, as MCP clients usually are)."""
        self.setdefault("token_endpoint_auth_method", "none")
        if self["token_endpoint_auth_method"] not in AUTH_METHODS:
            raise InvalidClientMetadataError(
                f"token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}"
            )


class RegistrationClosed(Exception):
    """As many clients as ``MCP_OAUTH_MAX_CLIENTS`` allows are kept: none is registered.

    :param most: that number.
    """

    def __init__(self, most: int) -> None:
        super().__init__(most)
        self.most = most


class RegistrationEndpoint(ClientRegistrationEndpoint):  # type: ignore[misc]
    """Dynamic Client Registration: open, or gated by initial access tokens.

    :param storage: where registered clients are kept.
    :param initial_access_tokens: bearer tokens a registration must present
        (``MCP_OAUTH_REGISTRATION_TOKENS``); empty: anyone may register.
    :param server_metadata: returns the RFC 8414 document (scopes, auth methods).
    :param max_bytes: the largest client metadata kept, as JSON
        (``MCP_OAUTH_CLIENT_METADATA_MAX_BYTES``, as for a metadata document).
    :param max_clients: the most clients kept (``MCP_OAUTH_MAX_CLIENTS``; 0: no bound).
    """

    ENDPOINT_NAME = "client_registration"

    def __init__(
        self,
        storage: Storage,
        initial_access_tokens: t.Sequence[str],
        server_metadata: t.Callable[[], dict[str, t.Any]],
        *,
        max_bytes: int = 5120,
        max_clients: int = 0,
    ) -> None:
        super().__init__(claims_classes=[MCPClientMetadataClaims])
        self.storage = storage
        self.max_clients = max_clients
        self.initial_access_tokens = tuple(initial_access_tokens)
        self._server_metadata = server_metadata
        self.max_bytes = max_bytes

    def extract_client_metadata(self, request: t.Any) -> dict[str, t.Any]:
        """A JSON object, Authlib's checks, then the size: every registration is stored
        for months.

        :raises InvalidClientMetadataError: the body is not a JSON object, or the
            metadata is larger than ``max_bytes``.
        """
        try:
            body = request.payload.data
        except (BadRequest, UnsupportedMediaType):  # not JSON, or not sent as JSON
            body = None
        if not isinstance(body, dict):
            raise InvalidClientMetadataError(
                "the body must be a JSON object of client metadata, sent with "
                "Content-Type: application/json (RFC 7591)"
            )
        metadata: dict[str, t.Any] = super().extract_client_metadata(request)
        size = len(json.dumps(metadata).encode())
        if size > self.max_bytes:
            raise InvalidClientMetadataError(
                f"the client metadata is {size} bytes as JSON, more than the {self.max_bytes} "
                "this server keeps: shorten it (client_name, redirect_uris...)"
            )
        return metadata

    def authenticate_token(self, request: t.Any) -> t.Any:
        """Accept anyone, or a bearer token among the initial access tokens."""
        if not self.initial_access_tokens:
            return True
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return None
        token = token.strip()
        if any(hmac.compare_digest(token, known) for known in self.initial_access_tokens):
            return True
        return None

    def get_server_metadata(self) -> dict[str, t.Any]:
        """The RFC 8414 document: registered scopes must be among ``scopes_supported``."""
        document = dict(self._server_metadata())
        # Registration does not restrict scopes: tools may declare new ones later.
        document.pop("scopes_supported", None)
        return document

    def generate_client_id(self, request: t.Any) -> str:
        """A random id that cannot be mistaken for a metadata document URL."""
        return "mcp-" + secrets.token_urlsafe(24)

    def generate_client_secret(self, request: t.Any) -> str | None:
        """A secret for confidential clients only; public clients (``none``) get none."""
        method = (request.payload.data or {}).get("token_endpoint_auth_method", "none")
        return None if method == "none" else secrets.token_urlsafe(32)

    def generate_client_info(self, request: t.Any) -> dict[str, t.Any]:
        """The ``client_id`` and, for a confidential client only, ``client_secret``.

        A public client's answer has no ``client_secret`` member at all (not ``null``,
        which clients that validate the response refuse).
        """
        info = dict(super().generate_client_info(request))
        if info.get("client_secret") is None:
            info.pop("client_secret", None)
            info.pop("client_secret_expires_at", None)
        return info

    def save_client(
        self, client_info: dict[str, t.Any], client_metadata: dict[str, t.Any], request: t.Any
    ) -> Client:
        """Store the client for :data:`CLIENT_LIFETIME`.

        :raises RegistrationClosed: ``max_clients`` clients are kept already.
        """
        record = {**client_metadata, **client_info}
        secret = record.pop("client_secret", None)
        if secret is not None:  # kept as its digest only: the storage never holds it
            record["client_secret_sha256"] = secret_digest(secret)
        record["client_id_issued_at"] = int(time.time())
        if not self.storage.save_client(record, CLIENT_LIFETIME, self.max_clients):
            raise RegistrationClosed(self.max_clients)
        return Client(record)


__all__ = [
    "AUTH_METHODS",
    "CLIENT_LIFETIME",
    "LOOPBACK_HOSTS",
    "Client",
    "MCPClientMetadataClaims",
    "RegistrationClosed",
    "RegistrationEndpoint",
    "check_redirect_uri_shape",
    "redirect_host",
    "redirect_uri_matches",
    "secret_digest",
]
