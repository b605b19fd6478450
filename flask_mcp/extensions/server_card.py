"""Server Cards (SEP-2127, experimental): who the server is and where to connect, before connecting.

With ``MCP_SERVER_CARD = True`` the app serves two public JSON documents:

- the **Server Card** at ``<MCP_PATH>/server-card`` (the location the draft
  reserves: the Streamable HTTP URL plus ``/server-card``), media type
  ``application/mcp-server-card+json``: the server's identity (``name`` in
  reverse-DNS form, ``version``, ``description``, ``title``, ``icons``,
  ``websiteUrl``, ``repository``) and one ``streamable-http`` remote with the
  protocol versions this endpoint serves (and the headers the app describes);
- an **AI Catalog** at ``/.well-known/ai-catalog.json`` (media type
  ``application/ai-catalog+json``) with one entry pointing to the card, for
  domain-level discovery.

The card is built from what the app declares: the :class:`~flask_mcp.MCP`
identity, ``MCP_PATH``, the supported protocol versions, and the canonical URL
of authorization (``MCP_AUTH_RESOURCE``) when it is on. Following the draft it
lists no tools, resources, prompts, skills, capabilities or extensions: those depend
on the caller and are listed at runtime; the schema has no field for authorization
metadata, which clients find at ``/.well-known/oauth-protected-resource``; ``_meta`` is
only what the app passes. ``init_app`` adds this extension when ``MCP_SERVER_CARD`` is on
and the server has none.

Both documents carry the headers the draft asks for: ``Access-Control-Allow-*``
for browsers (``*``: the documents are public), ``Cache-Control: public,
max-age=3600``, a strong ``ETag``, and ``304 Not Modified`` to an
``If-None-Match`` that matches. They are served outside the MCP endpoint: no
authorization, no session; but a ``Host`` the endpoint refuses (``MCP_ALLOWED_HOSTS``)
gets its 421 here too, since the card's URL is built from it.

The routes are plain WSGI applications handed to Flask, so this module reads
no Flask request (the layers: an extension sits below the transport).
"""

from __future__ import annotations

import functools
import hashlib
import json
import pathlib
import re
import typing as t
from urllib.parse import urlsplit

from werkzeug.datastructures import MIMEAccept
from werkzeug.http import is_resource_modified
from werkzeug.http import parse_accept_header
from werkzeug.http import quote_etag
from werkzeug.wrappers import Request

from .. import protocol
from ..errors import MCPHTTPError
from ..kernel.extension import Extension
from ..protocol.hosts import check_request_host

if t.TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse
    from _typeshed.wsgi import WSGIEnvironment
    from flask import Flask

#: The ``$schema`` of a Server Card (the ``v1`` family).
SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
CARD_MEDIA_TYPE = "application/mcp-server-card+json"
CATALOG_MEDIA_TYPE = "application/ai-catalog+json"
#: Appended to the Streamable HTTP URL (``MCP_PATH``).
CARD_SUFFIX = "/server-card"
#: Where domain-level discovery looks for the AI Catalog.
CATALOG_PATH = "/.well-known/ai-catalog.json"
CACHE_CONTROL = "public, max-age=3600"
#: The CORS headers the draft requires of a hosted card.
CORS_HEADERS = (
    ("Access-Control-Allow-Origin", "*"),
    ("Access-Control-Allow-Methods", "GET"),
    ("Access-Control-Allow-Headers", "Content-Type, If-None-Match"),
    ("Access-Control-Expose-Headers", "ETag"),
)
#: A card's ``name``: reverse-DNS namespace, one slash, a name.
NAME = re.compile(r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")
#: A version range, which schema.ts says a card's ``version`` is not: a comparator in
#: front of the version or of one of its space-separated parts (``^1.2``, ``~1.2``,
#: ``>=1.2 <2``), a hyphen range (``1.2 - 1.3``) or a union (``1 || 2``).
VERSION_RANGE = re.compile(r"(^|\s)[\^~<>=]|\s-\s|\|\|")
#: A wildcard part (``1.x``, ``1.*``, ``*``) of a version's core: what comes before its
#: pre-release (``-``) or build metadata (``+``), where ``x`` is an identifier like any
#: other (``1.0.0-rc.x`` is one version).
VERSION_WILDCARD = re.compile(r"(^|[.\s])[xX*]([.\s]|$)")
MAX_DESCRIPTION = 100
MAX_TITLE = 100
#: The draft's generated JSON Schema (experimental-ext-server-card ``schema.json`` at
#: 8924e08682b4a936e6464b57845ec2ff17dc8776), copied unchanged: every rule a card follows.
SCHEMA_FILE = pathlib.Path(__file__).parent / "schemas" / "server-card.schema.json"

Builder = t.Callable[[str], dict[str, t.Any]]


def card_path(mcp_path: str) -> str:
    """Return the path of the card: ``MCP_PATH`` plus ``/server-card``."""
    return mcp_path.rstrip("/") + CARD_SUFFIX


def catalog_identifier(name: str) -> str:
    """Return the AI Catalog identifier of a card named ``name``.

    ``com.example/weather`` gives ``urn:air:example.com:mcp:weather``: the
    reverse-DNS namespace read as a domain, the ``mcp`` namespace, the name.
    """
    namespace, _, short = name.partition("/")
    publisher = ".".join(reversed(namespace.split(".")))
    return f"urn:air:{publisher}:mcp:{short}"


def _is_version_range(version: str) -> bool:
    """Tell whether ``version`` is a version range (``^1.2``, ``1.x``, ``1.2 - 1.3``, ``1 || 2``).

    A wildcard counts only in the core: ``1.0.0-rc.x`` and ``1.0.0+build.x`` are versions.
    """
    core = re.split(r"[-+]", version, maxsplit=1)[0]
    return bool(VERSION_RANGE.search(version) or VERSION_WILDCARD.search(core))


def _absolute_url(value: t.Any, schemes: tuple[str, ...]) -> bool:
    """Tell whether ``value`` is an absolute URI of one of ``schemes`` (``data:`` needs no host)."""
    if not isinstance(value, str):
        return False
    try:
        parts = urlsplit(value)
    except ValueError:  # an unclosed "[", say
        return False
    return parts.scheme in schemes and (parts.scheme == "data" or bool(parts.netloc))


#: A ``{variable}`` in an input's ``value``, which the client substitutes.
PLACEHOLDER = re.compile(r"\{[a-zA-Z_][a-zA-Z0-9_]*\}")


def _inputs(remote: t.Mapping[str, t.Any]) -> t.Iterator[tuple[t.Any, t.Mapping[str, t.Any]]]:
    """Yield each input of a remote with its name: its headers and every ``variables`` entry."""
    for header in remote.get("headers", ()):
        if isinstance(header, t.Mapping):
            yield header.get("name"), header
    for holder in (remote, *remote.get("headers", ())):
        variables = holder.get("variables") if isinstance(holder, t.Mapping) else None
        if isinstance(variables, t.Mapping):
            for name, variable in variables.items():
                if isinstance(variable, t.Mapping):
                    yield name, variable


def _secret_problems(card: t.Mapping[str, t.Any]) -> list[str]:
    """Return the secret inputs of ``card`` given a value: a public card holds no credential."""
    problems = []
    for remote in card.get("remotes", ()):
        for name, given in _inputs(remote):
            if given.get("isSecret") is not True:
                continue
            value = given.get("value")
            literal = isinstance(value, str) and PLACEHOLDER.sub("", value) == value
            if "default" in given or literal:
                problems.append(
                    f"{name!r} is a secret (isSecret) with a value, and a Server Card is "
                    "public: leave its default out, and let its value only reference "
                    "{variables} the client asks the user for"
                )
    return problems


@functools.cache
def _validator() -> t.Any:
    """Return a validator of Server Cards (the schema file has no root: its ``ServerCard``)."""
    import jsonschema  # only when a card is checked: the hot path never needs it

    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator({**schema, "$ref": "#/$defs/ServerCard"})


def schema_problems(card: dict[str, t.Any]) -> list[str]:
    """Return where and why ``card`` breaks a rule of the Server Card schema file."""
    errors = sorted(_validator().iter_errors(card), key=lambda error: list(map(str, error.path)))
    return [
        f"at {'/'.join(map(str, error.absolute_path)) or 'its top'}: {error.message}: "
        "pass a value of the type the Server Card schema gives"
        for error in errors
    ]


def card_problems(card: dict[str, t.Any]) -> list[str]:
    """Return why ``card`` breaks the rules of the Server Card schema, each with its fix.

    The common mistakes get a message of their own; any other rule of the schema
    (a header's ``isRequired`` that is no boolean, an icon's ``theme``, ``_meta``
    that is no object) is reported with where it is broken. So is a secret input
    (``isSecret``) given a ``default``, or a ``value`` that is not a ``{variable}``
    template: the card is public, and the discovery text forbids credentials in it.
    """
    problems = []
    name = card.get("name", "")
    if not NAME.match(name) or not 3 <= len(name) <= 200:
        problems.append(
            f"its name {name!r} is not a reverse-DNS server name with one '/' (such as "
            "'com.example/weather'): name the MCP server so, or add "
            "mcp.add_extension(ServerCard(name='com.example/...')) before init_app"
        )
    description = card.get("description")
    if not description:
        problems.append(
            "it needs a description: pass MCP(description=...) or ServerCard(description=...)"
        )
    elif len(description) > MAX_DESCRIPTION:
        problems.append(
            f"its description is {len(description)} characters long; a card's is at most "
            f"{MAX_DESCRIPTION}: pass a shorter ServerCard(description=...)"
        )
    title = card.get("title")
    if title is not None and not 1 <= len(title) <= MAX_TITLE:
        problems.append(
            f"its title is {len(title)} characters long; a card's is 1 to {MAX_TITLE}: "
            "shorten MCP(title=...)"
        )
    version = card.get("version", "")
    if len(version) > 255:
        problems.append("its version is longer than 255 characters")
    elif isinstance(version, str) and _is_version_range(version):
        problems.append(
            f"its version {version!r} is a range; a card's is the one version served (such "
            "as '1.0.2'): pass MCP(version=...)"
        )
    website = card.get("websiteUrl")
    if website is not None and not _absolute_url(website, ("http", "https")):
        problems.append(
            f"its websiteUrl {website!r} is not an absolute http(s) URL: pass "
            "MCP(website_url='https://example.com/...')"
        )
    for icon in card.get("icons", ()):
        source = icon.get("src") if isinstance(icon, dict) else None
        if not _absolute_url(source, ("http", "https", "data")):
            problems.append(
                f"the icon {icon!r} has no src that is an http(s) or data: URI: pass "
                "MCP(icons=[{'src': 'https://example.com/icon.png', 'mimeType': 'image/png'}])"
            )
    repository = card.get("repository")
    if repository is not None and not (
        isinstance(repository, dict)
        and _absolute_url(repository.get("url"), ("http", "https"))
        and isinstance(repository.get("source"), str)
        and repository["source"]
    ):
        problems.append(
            f"its repository {repository!r} needs an absolute url and a source: pass "
            "ServerCard(repository={'url': 'https://github.com/o/r', 'source': 'github'})"
        )
    for remote in card.get("remotes", ()):
        for header in remote.get("headers", ()):
            if not isinstance(header, dict) or not isinstance(header.get("name"), str):
                problems.append(
                    f"the header {header!r} has no name: pass ServerCard(headers=[{{'name': "
                    "'X-Api-Key', 'isRequired': True, 'isSecret': True, 'description': ...}])"
                )
    problems += _secret_problems(card)
    return problems or schema_problems(card)


def build_card(
    fields: t.Mapping[str, t.Any],
    url: str,
    *,
    name: str | None = None,
    description: str | None = None,
    repository: dict[str, t.Any] | None = None,
    meta: dict[str, t.Any] | None = None,
    headers: t.Sequence[dict[str, t.Any]] | None = None,
    variables: dict[str, dict[str, t.Any]] | None = None,
    versions: t.Sequence[str] = protocol.SUPPORTED_VERSIONS,
) -> dict[str, t.Any]:
    """Return the Server Card of a server.

    :param fields: the server's ``serverInfo`` (``name``, ``version``, ``title``,
        ``description``, ``icons``, ``websiteUrl``).
    :param url: the absolute URL of the Streamable HTTP endpoint.
    :param name: the card's reverse-DNS name (default: ``fields["name"]``).
    :param description: the card's description (default: the server's).
    :param repository: ``{"url": ..., "source": "github", ...}`` of the source code.
    :param meta: the card's ``_meta``, namespaced vendor data.
    :param headers: the remote's ``headers``: HTTP headers a client must or may send
        (``KeyValueInput``: ``name``, ``description``, ``isRequired``, ``isSecret``...).
    :param variables: the remote's ``variables``, for ``{placeholders}`` in header values.
    :param versions: the protocol versions the endpoint serves.
    """
    card: dict[str, t.Any] = {
        "$schema": SCHEMA_URL,
        "name": name or fields["name"],
        "version": fields["version"],
        "description": description or fields.get("description") or "",
    }
    for key in ("title", "websiteUrl", "icons"):
        if fields.get(key) is not None:
            card[key] = fields[key]
    if repository is not None:
        card["repository"] = repository
    remote: dict[str, t.Any] = {"type": "streamable-http", "url": url}
    if headers:
        remote["headers"] = [dict(header) for header in headers]
    if variables:
        remote["variables"] = {key: dict(value) for key, value in variables.items()}
    remote["supportedProtocolVersions"] = list(versions)
    card["remotes"] = [remote]
    if meta:
        card["_meta"] = meta
    return card


def build_catalog(entries: t.Iterable[tuple[str, str]]) -> dict[str, t.Any]:
    """Return an AI Catalog of Server Cards from ``(identifier, card URL)`` pairs."""
    return {
        "specVersion": "1.0",
        "entries": [
            {"identifier": identifier, "type": CARD_MEDIA_TYPE, "url": url}
            for identifier, url in entries
        ],
    }


def encode(document: dict[str, t.Any]) -> bytes:
    """Return the JSON of a document, the same bytes every time for the same document."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def entity_tag(body: bytes, media_type: str) -> str:
    """Return the strong entity tag (unquoted) of a representation: its hash and type."""
    return hashlib.sha256(media_type.encode() + b"\n" + body).hexdigest()[:32]


def negotiate(accept: str | None, media_type: str) -> str:
    """Return the ``Content-Type`` to answer with: ``media_type``, or JSON if only that is asked.

    A client that accepts ``application/json`` but neither the document's own
    type nor a wildcard gets ``application/json``; any other gets ``media_type``.
    """
    if not accept:
        return media_type
    accepted = parse_accept_header(accept, MIMEAccept)
    if accepted[media_type] > 0 or accepted["application/json"] <= 0:
        return media_type
    return "application/json"


class JSONDocument:
    """A WSGI application serving one public JSON document with CORS and validators.

    :param build: returns the document for the URL the application is served
        at (``scheme://host`` plus the script root, without trailing slash).
    :param media_type: the document's own media type.
    :param allowed_hosts: ``MCP_ALLOWED_HOSTS``: a ``Host`` the MCP endpoint refuses
        gets the same 421 here, as the URL in the document is built from it.
    """

    def __init__(
        self,
        build: Builder,
        media_type: str,
        allowed_hosts: tuple[str, ...] | None = None,
    ) -> None:
        self.build = build
        self.media_type = media_type
        self.allowed_hosts = allowed_hosts

    def __call__(
        self, environ: WSGIEnvironment, start_response: StartResponse
    ) -> t.Iterable[bytes]:
        request = Request(environ)
        try:
            check_request_host(environ, self.allowed_hosts)
        except MCPHTTPError as refused:
            return refused(environ, start_response)
        if environ.get("REQUEST_METHOD") == "OPTIONS":  # a browser's preflight
            start_response("204 No Content", [*CORS_HEADERS, ("Access-Control-Max-Age", "86400")])
            return []
        base = request.root_url.rstrip("/")
        content_type = negotiate(environ.get("HTTP_ACCEPT"), self.media_type)
        body = encode(self.build(base))
        tag = entity_tag(body, content_type)
        headers = [
            ("Cache-Control", CACHE_CONTROL),
            ("ETag", quote_etag(tag)),
            ("Vary", "Accept"),
            *CORS_HEADERS,
        ]
        if not is_resource_modified(environ, etag=tag):
            start_response("304 Not Modified", headers)
            return []
        headers += [("Content-Type", content_type), ("Content-Length", str(len(body)))]
        start_response("200 OK", headers)
        return [body]


class ServerCard(Extension):
    """Publish a Server Card and an AI Catalog entry (SEP-2127), when ``MCP_SERVER_CARD`` is on.

    Off by default: the extension is experimental. The identity comes from the
    :class:`~flask_mcp.MCP`; pass here what it lacks::

        mcp.add_extension(ServerCard(name="com.example/weather"))
        app.config["MCP_SERVER_CARD"] = True

    :param name: the card's name in reverse-DNS form (``com.example/weather``);
        default: the server's name, which must then have that form.
    :param description: at most 100 characters; default: the server's.
    :param repository: where the source is: ``{"url": "https://github.com/o/r",
        "source": "github"}`` (and ``subfolder``, ``id``).
    :param meta: the card's ``_meta``: vendor data under a namespaced key.
    :param headers: HTTP headers a client sends when connecting, beyond what MCP and
        OAuth define (an API key the authorizer reads, a tenant header): the remote's
        ``headers``, each ``{"name": ..., "description": ..., "isRequired": ...,
        "isSecret": ...}``. Describe them; never put a secret value in.
    :param variables: the remote's ``variables`` (``{placeholders}`` in header values).
    :param catalog: serve ``/.well-known/ai-catalog.json`` too (``False`` when
        the site publishes an AI Catalog of its own, listing this card's URL).
    """

    id = "io.modelcontextprotocol/server-card"

    def __init__(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        repository: dict[str, t.Any] | None = None,
        meta: dict[str, t.Any] | None = None,
        headers: t.Sequence[dict[str, t.Any]] | None = None,
        variables: dict[str, dict[str, t.Any]] | None = None,
        catalog: bool = True,
    ) -> None:
        self.name = name
        self.description = description
        self.repository = repository
        self.meta = meta
        self.headers = headers
        self.variables = variables
        self.catalog = catalog

    def capability(self, era: str = "handshake") -> dict[str, t.Any] | None:
        """Not a runtime capability: the card is read before connecting."""
        return None

    def card(self, mcp: t.Any, url: str) -> dict[str, t.Any]:
        """Return the card of ``mcp`` served at the Streamable HTTP ``url``."""
        return build_card(
            mcp.server_info,
            url,
            name=self.name,
            description=self.description,
            repository=self.repository,
            meta=self.meta,
            headers=self.headers,
            variables=self.variables,
        )

    def check_app(self, app: Flask, mcp: t.Any) -> None:
        """Check that the card of ``app`` can be served if ``MCP_SERVER_CARD`` is on.

        :raises ValueError: ``MCP_PATH`` has URL variables, or the card would break
            the schema (no reverse-DNS name, a description missing or too long); the
            message says the fix.
        """
        settings = mcp.state(app).settings
        if not settings.server_card:
            return
        mcp_path: str = settings.path
        if "<" in mcp_path:
            raise ValueError(
                f"MCP_SERVER_CARD is on, but MCP_PATH = {mcp_path!r} has URL variables (one"
                " endpoint per tenant), and a Server Card describes one endpoint. Turn"
                " MCP_SERVER_CARD off, or serve the card from a view of your own."
            )
        canonical: str | None = settings.auth_resource
        problems = card_problems(self.card(mcp, canonical or "https://example.invalid/"))
        if problems:
            raise ValueError(
                "MCP_SERVER_CARD is on, but the Server Card cannot be built: "
                + "; ".join(problems)
                + "."
            )

    def init_app(self, app: Flask, mcp: t.Any) -> None:
        """Serve the card and the catalog on ``app`` if ``MCP_SERVER_CARD`` is on.

        The Streamable HTTP URL in the card is ``MCP_AUTH_RESOURCE`` when
        authorization is on (the canonical URL of the server), else the URL the
        request came to (``ProxyFix`` makes it right behind a proxy).
        """
        settings = mcp.state(app).settings
        if not settings.server_card:
            return
        canonical: str | None = settings.auth_resource
        mcp_path: str = settings.path
        path = card_path(mcp_path)
        if canonical is not None:

            def endpoint(base: str) -> str:
                return canonical

        else:

            def endpoint(base: str) -> str:
                return base + mcp_path

        def card_url(base: str) -> str:
            return endpoint(base).rstrip("/") + CARD_SUFFIX

        hosts = settings.allowed_hosts
        card = JSONDocument(lambda base: self.card(mcp, endpoint(base)), CARD_MEDIA_TYPE, hosts)
        methods = ["GET", "OPTIONS"]
        app.add_url_rule(
            path, "mcp_server_card", lambda: card, methods=methods, provide_automatic_options=False
        )
        if self.catalog:
            identifier = catalog_identifier(self.name or mcp.name)
            catalog = JSONDocument(
                lambda base: build_catalog([(identifier, card_url(base))]),
                CATALOG_MEDIA_TYPE,
                hosts,
            )
            app.add_url_rule(
                CATALOG_PATH,
                "mcp_ai_catalog",
                lambda: catalog,
                methods=methods,
                provide_automatic_options=False,
            )


__all__ = [
    "CACHE_CONTROL",
    "CARD_MEDIA_TYPE",
    "CARD_SUFFIX",
    "CATALOG_MEDIA_TYPE",
    "CATALOG_PATH",
    "CORS_HEADERS",
    "SCHEMA_FILE",
    "SCHEMA_URL",
    "JSONDocument",
    "ServerCard",
    "build_card",
    "build_catalog",
    "card_path",
    "card_problems",
    "catalog_identifier",
    "encode",
    "entity_tag",
    "negotiate",
    "schema_problems",
]
