"""RFC 9728 Protected Resource Metadata and the checks on the ``MCP_AUTH_*`` settings.

The metadata document tells clients which authorization servers issue tokens
for this server. It is served at the well-known path inserted before the MCP
path (``/.well-known/oauth-protected-resource/mcp``) and at the root.
"""

from __future__ import annotations

import re
import typing as t
from urllib.parse import quote
from urllib.parse import urlsplit
from urllib.parse import urlunsplit

from .. import url_rules
from ..protocol import is_local_host

if t.TYPE_CHECKING:
    from ..config import Settings

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def check_https(url: str, key: str, insecure: bool = False) -> None:
    """Refuse ``http://`` outside localhost unless ``insecure`` (``MCP_AUTH_INSECURE_HTTP``).

    :raises ValueError: the message says how to fix it.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() == "http" and not insecure and not is_local_host(parts.hostname):
        raise ValueError(
            f"{key}={url!r} uses http:// on a host that is not local: use https:// (OAuth 2.1 "
            "requires TLS outside localhost), or set MCP_AUTH_INSECURE_HTTP=True on a private "
            "test network."
        )
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{key}={url!r} contains credentials (user@host): remove them.")


def canonical_resource(url: str) -> str:
    """Return ``url`` with a lowercase scheme and host and without a lone trailing slash."""
    parts = urlsplit(url)
    path = "" if parts.path == "/" else parts.path
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def fill_path_args(url: str, path_args: t.Mapping[str, t.Any]) -> str:
    """Fill the ``<name>`` (or ``<converter:name>``) placeholders of ``url`` with the values of
    ``MCP_PATH``'s URL variables; a placeholder without a value stays as it is."""
    if not path_args or "<" not in url:
        return url
    return url_rules.substitute(
        url,
        lambda _converter, name: (
            quote(str(path_args[name]), safe="") if name in path_args else None
        ),
    )


def resource_pattern(resource: str) -> re.Pattern[str] | None:
    """Return what the resources of ``resource`` look like when it holds placeholders of
    ``MCP_PATH``'s URL variables (one resource per tenant), or ``None`` without any.

    A placeholder stands for one path segment (a ``<path:...>`` one for several); the
    pattern matches canonical resources (:func:`canonical_resource`).
    """
    if not url_rules.has_variables(resource):
        return None
    parts, end = [], 0
    for match in url_rules.VARIABLE.finditer(resource):
        parts.append(re.escape(resource[end : match.start()]))
        parts.append("[^?#]+" if match[1] == "path" else "[^/?#]+")
        end = match.end()
    parts.append(re.escape(resource[end:]))
    return re.compile("".join(parts))


def check_tenant_resource(resource: str, mcp_path: str) -> None:
    """Refuse an ``MCP_AUTH_RESOURCE`` that is not one resource per endpoint of ``MCP_PATH``.

    With URL variables in ``MCP_PATH`` (``/t/<tenant>/mcp``) each tenant's endpoint is a
    protected resource of its own (RFC 8707, RFC 9728: the resource is the URL the client
    uses), so ``MCP_AUTH_RESOURCE`` must name every variable, and only those.

    :raises ValueError: the message says how to write ``MCP_AUTH_RESOURCE``.
    """
    variables = url_rules.variables(mcp_path)
    named = url_rules.variables(resource)
    unknown = [name for name in named if name not in variables]
    parts = urlsplit(resource)
    example = urlunsplit((parts.scheme, parts.netloc, mcp_path, "", ""))
    if unknown:
        raise ValueError(
            f"MCP_AUTH_RESOURCE={resource!r} holds <{unknown[0]}>, which is not a URL variable "
            f"of MCP_PATH={mcp_path!r}, so nothing fills it. Use the variables of MCP_PATH "
            f"({example!r}), or none."
        )
    missing = [name for name in variables if name not in named]
    if missing:
        names = ", ".join(f"<{name}>" for name in missing)
        raise ValueError(
            f"MCP_PATH={mcp_path!r} has URL variables (one endpoint per tenant), but "
            f"MCP_AUTH_RESOURCE={resource!r} does not name {names}: a token would be accepted "
            "at every tenant's endpoint, and a tenant's metadata would name a resource other "
            "than the URL its clients use (RFC 9728). Write the same variables in "
            f"MCP_AUTH_RESOURCE, for example {example!r}."
        )


def check_audiences(audience: t.Iterable[str], resource: str, where: str) -> None:
    """Refuse accepted audiences that would let one tenant's token in at another's endpoint.

    When ``resource`` names URL variables (one resource per tenant), each audience must
    name them too: it is filled per request, as the resource is.

    :param where: what accepts ``audience``, for the message (``MCP_AUTH_JWT_AUDIENCE``).
    :raises ValueError: the message says how to fix it.
    """
    named = set(url_rules.variables(resource))
    if not named:
        return
    for value in audience:
        if not named <= set(url_rules.variables(value)):
            raise ValueError(
                f"{where} accepts the audience {value!r}, but MCP_AUTH_RESOURCE={resource!r} "
                "is one resource per tenant: a token for that audience would be accepted at "
                "every tenant's endpoint. Write the same placeholders in each audience "
                f"({resource!r}), or leave the audience unset to accept MCP_AUTH_RESOURCE."
            )


def metadata_url(resource: str) -> str:
    """Return the metadata URL of ``resource``: the well-known path inserted before its path."""
    parts = urlsplit(resource)
    return urlunsplit((parts.scheme, parts.netloc, WELL_KNOWN + parts.path, parts.query, ""))


def auth_enabled(settings: Settings, has_authorizer: bool) -> bool:
    """Tell whether authorization is on, refusing incomplete or unsafe configurations.

    :raises ValueError: the message says what to set.
    """
    jwks = settings.auth_jwt_jwks_url
    servers = settings.auth_authorization_servers
    if settings.auth_resource is None:
        found = [
            name
            for name, on in (
                ("an authorizer (@mcp.authorizer)", has_authorizer),
                ("MCP_AUTH_AUTHORIZATION_SERVERS", bool(servers)),
                ("MCP_AUTH_JWT_JWKS_URL", bool(jwks)),
            )
            if on
        ]
        if found:
            raise ValueError(
                f"Authorization is half configured: {' and '.join(found)} but no "
                "MCP_AUTH_RESOURCE. Set MCP_AUTH_RESOURCE to the URL clients use for this "
                "server, for example 'https://mcp.example.com/mcp'."
            )
        return False
    if not servers:
        raise ValueError(
            "MCP_AUTH_RESOURCE is set but MCP_AUTH_AUTHORIZATION_SERVERS is empty: list the issuer "
            "URL of at least one authorization server, for example ['https://auth.example.com']."
        )
    if not has_authorizer and not jwks:
        raise ValueError(
            "Authorization is on (MCP_AUTH_RESOURCE is set) but nothing checks tokens: register a "
            "function with @mcp.authorizer, pass MCP(authorizer=...), or set MCP_AUTH_JWT_JWKS_URL "
            "for JWT access tokens."
        )
    if has_authorizer and jwks:
        raise ValueError(
            "Both an authorizer and MCP_AUTH_JWT_JWKS_URL are set: remove MCP_AUTH_JWT_JWKS_URL, "
            "or remove the authorizer and let the MCP_AUTH_JWT_* settings build one."
        )
    insecure = settings.auth_insecure_http
    check_https(settings.auth_resource, "MCP_AUTH_RESOURCE", insecure)
    check_tenant_resource(settings.auth_resource, settings.path)
    for server in servers:
        check_https(server, "MCP_AUTH_AUTHORIZATION_SERVERS", insecure)
        if urlsplit(server).query:
            raise ValueError(
                f"MCP_AUTH_AUTHORIZATION_SERVERS: {server!r} has a query; issuer URLs have none."
            )
    if jwks:
        check_https(jwks, "MCP_AUTH_JWT_JWKS_URL", insecure)
    return True


def metadata_document(settings: Settings, resource: str, resource_name: str) -> dict[str, t.Any]:
    """Return the Protected Resource Metadata document."""
    document: dict[str, t.Any] = {
        "resource": resource,
        "authorization_servers": list(settings.auth_authorization_servers or ()),
        "bearer_methods_supported": ["header"],
        "resource_name": resource_name,
    }
    if settings.auth_scopes_supported is not None:
        document["scopes_supported"] = list(settings.auth_scopes_supported)
    document.update(settings.auth_metadata)
    return document


def metadata_paths(resource: str, mcp_path: str) -> list[str]:
    """Return the paths of the document: under the MCP path, under the resource's path, the root.

    The root is left out when ``resource`` holds ``<name>`` placeholders (one resource per
    tenant): no URL variable fills them there, and ``resource`` must be a URL (RFC 9728).
    """
    paths = [WELL_KNOWN + p for p in (mcp_path, urlsplit(resource).path) if p not in ("", "/")]
    if not url_rules.has_variables(resource):
        paths.append(WELL_KNOWN)
    return list(dict.fromkeys(paths))


__all__ = [
    "WELL_KNOWN",
    "auth_enabled",
    "canonical_resource",
    "check_audiences",
    "check_https",
    "check_tenant_resource",
    "fill_path_args",
    "metadata_document",
    "metadata_paths",
    "metadata_url",
    "resource_pattern",
]
