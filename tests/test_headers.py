from __future__ import annotations

import typing as t

import pytest
from werkzeug.datastructures import Headers

from flask_mcp import MCP
from flask_mcp.protocol.header_mirror import mirrors_body
from flask_mcp.protocol.headers import NAME_SOURCES
from flask_mcp.protocol.headers import TASKS_NAME_SOURCES
from flask_mcp.protocol.headers import HeaderMismatch
from flask_mcp.protocol.headers import HeaderParam
from flask_mcp.protocol.headers import WSGIHeaders
from flask_mcp.protocol.headers import decode_header_value
from flask_mcp.protocol.headers import encode_header_value
from flask_mcp.protocol.headers import expected_name
from flask_mcp.protocol.headers import validate_protocol_version_header
from flask_mcp.protocol.headers import validate_routing_headers
from flask_mcp.protocol.headers import validate_x_mcp_header_schema

V = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {},
}
REGION = HeaderParam(("region",), "Region", "string")


def call(name: str, arguments: t.Any = None, **extra: t.Any) -> dict[str, t.Any]:
    params: dict[str, t.Any] = {"name": name, "_meta": META, **extra}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def request(method: str, **params: t.Any) -> dict[str, t.Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": META, **params}}


# -- value encoding ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("original", "encoded"),
    [  # The spec's encoding examples (streamable-http.mdx, Value Encoding).
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ],
)
def test_spec_encoding_examples(original: str, encoded: str) -> None:
    assert encode_header_value(original) == encoded
    assert decode_header_value(encoded) == original


@pytest.mark.parametrize(
    ("value", "encoded"), [(True, "true"), (False, "false"), (42, "42"), (-7, "-7"), ("", "")]
)
def test_encode_primitives(value: t.Any, encoded: str) -> None:
    assert encode_header_value(value) == encoded


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        ("us-west1", "us-west1"),
        ("  T  ", "T"),
        ("\tT\t", "T"),
        ("a b\tc", "a b\tc"),
        ("=?base64?SGVsbG8=?=", "Hello"),
        (" =?base64?SGVsbG8=?= ", "Hello"),
        ("=?base64??=", ""),
        ("SGVsbG8=", "SGVsbG8="),  # no prefix: literal
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),  # no suffix: literal
        ("SGVsbG8=?=", "SGVsbG8=?="),
        ("=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?="),  # markers are case-sensitive
        ("=?base64?=", "=?base64?="),  # too short to hold both markers
    ],
)
def test_decode(raw: str, decoded: str) -> None:
    assert decode_header_value(raw) == decoded


@pytest.mark.parametrize(
    "raw",
    [
        "=?base64?SGVsbG8?=",  # missing padding
        "=?base64?SGVs!!!bG8=?=",  # bad characters
        "=?base64?SGVsbG8=====?=",  # too much padding
        "=?base64?SGVs bG8=?=",  # embedded space
        "=?base64?SGVsbG8_?=",  # URL-safe alphabet is not allowed
        "=?base64?SGVsbG9=?=",  # non-canonical trailing bits
        "=?base64?/w==?=",  # not UTF-8
        "=?base64?S?=",
    ],
)
def test_decode_rejects_bad_base64(raw: str) -> None:
    with pytest.raises(HeaderMismatch, match="Base64") as info:
        decode_header_value(raw, "Mcp-Param-Region")
    assert info.value.header == "Mcp-Param-Region"
    assert info.value.code == -32020 and info.value.http_status == 400


@pytest.mark.parametrize("raw", ["a\x00b", "a\rb", "a\nb", "caf\xe9", "\x7f", "世界"])
def test_decode_rejects_invalid_characters(raw: str) -> None:
    with pytest.raises(HeaderMismatch, match="not allowed"):
        decode_header_value(raw)


# -- Mcp-Name source ---------------------------------------------------------------------------


def test_expected_name() -> None:
    assert expected_name("tools/call", {"name": "t"}) == "t"
    assert expected_name("prompts/get", {"name": "p"}) == "p"
    assert expected_name("resources/read", {"uri": "file:///x"}) == "file:///x"
    assert expected_name("tools/list", {"name": "t"}) is None
    assert expected_name("tools/call", {}) is None
    assert expected_name("tools/call", {"name": 3}) is None
    assert expected_name("tools/call", None) is None
    assert expected_name("tasks/get", {"taskId": "x"}) is None
    sources = {**NAME_SOURCES, **TASKS_NAME_SOURCES}
    assert expected_name("tasks/get", {"taskId": "x"}, name_sources=sources) == "x"
    assert expected_name(t.cast(str, None), {"name": "t"}) is None


# -- standard headers (conformance http-header-validation) -------------------------------------


@pytest.mark.parametrize(
    ("message", "headers"),
    [
        (request("tools/list"), {"Mcp-Method": "tools/list"}),
        (request("tools/list"), {"mcp-method": "tools/list"}),
        (request("tools/list"), {"MCP-METHOD": "tools/list"}),
        (request("tools/list"), {"Mcp-Method": " tools/list "}),
        (
            call("test_simple_text", {}),
            {"Mcp-Method": "tools/call", "Mcp-Name": "  test_simple_text  "},
        ),
        (call("t"), {"Mcp-Method": "tools/call", "Mcp-Name": "t", "Mcp-Param-Unknown": "x"}),
        (request("prompts/get", name="p"), {"Mcp-Method": "prompts/get", "Mcp-Name": "p"}),
        (
            request("resources/read", uri="file:///a b/é"),
            {"Mcp-Method": "resources/read", "Mcp-Name": encode_header_value("file:///a b/é")},
        ),
        (request("server/discover"), {"Mcp-Method": "server/discover", "Mcp-Name": "ignored"}),
        (request("tools/call"), {"Mcp-Method": "tools/call"}),  # no name: params check reports it
    ],
)
def test_routing_headers_accepted(message: dict[str, t.Any], headers: dict[str, str]) -> None:
    validate_routing_headers(headers, message)


@pytest.mark.parametrize(
    ("message", "headers", "header", "match"),
    [
        (request("tools/list"), {"Mcp-Method": "prompts/list"}, "Mcp-Method", "does not match"),
        (request("tools/list"), {}, "Mcp-Method", "missing"),
        (request("tools/list"), {"Mcp-Method": "TOOLS/LIST"}, "Mcp-Method", "case-sensitive"),
        (
            call("t", {}),
            {"Mcp-Method": "tools/call", "Mcp-Name": "wrong_tool_name"},
            "Mcp-Name",
            "does not match",
        ),
        (call("t", {}), {"Mcp-Method": "tools/call"}, "Mcp-Name", "missing"),
        (
            request("prompts/get", name="p"),
            {"Mcp-Method": "prompts/get", "Mcp-Name": "P"},
            "Mcp-Name",
            "does not match",
        ),
        (
            request("resources/read", uri="file:///x"),
            {"Mcp-Method": "resources/read"},
            "Mcp-Name",
            "Mcp-Name: file:///x",
        ),
        (
            call("t"),
            {"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?dA?="},
            "Mcp-Name",
            "Base64",
        ),
    ],
)
def test_routing_headers_rejected(
    message: dict[str, t.Any], headers: dict[str, str], header: str, match: str
) -> None:
    with pytest.raises(HeaderMismatch, match=match) as info:
        validate_routing_headers(headers, message)
    assert info.value.header == header
    assert str(info.value).startswith("Header mismatch: ")


def test_missing_name_hint_is_encoded() -> None:
    with pytest.raises(HeaderMismatch, match=r"Mcp-Name: =\?base64\?"):
        validate_routing_headers({"Mcp-Method": "tools/call"}, call("naïve"))


def test_encoded_name_accepted() -> None:
    headers = {"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?bmHDr3Zl?="}
    validate_routing_headers(headers, call("naïve"))


def test_werkzeug_headers_accepted() -> None:
    headers = Headers([("MCP-Method", "tools/call"), ("mcp-name", "t")])
    validate_routing_headers(headers, call("t"))


def test_duplicate_header_values_rejected() -> None:
    headers = Headers([("Mcp-Method", "tools/list"), ("mcp-method", "tools/call")])
    with pytest.raises(HeaderMismatch, match="twice"):
        validate_routing_headers(headers, request("tools/list"))
    same = Headers([("Mcp-Method", "tools/list"), ("mcp-method", "tools/list")])
    validate_routing_headers(same, request("tools/list"))


def test_tasks_name_sources() -> None:
    sources = {**NAME_SOURCES, **TASKS_NAME_SOURCES}
    message = request("tasks/get", taskId="abc")
    validate_routing_headers({"Mcp-Method": "tasks/get"}, message)
    with pytest.raises(HeaderMismatch, match="Mcp-Name"):
        validate_routing_headers({"Mcp-Method": "tasks/get"}, message, name_sources=sources)
    validate_routing_headers(
        {"Mcp-Method": "tasks/get", "Mcp-Name": "abc"}, message, name_sources=sources
    )


# -- MCP-Protocol-Version ----------------------------------------------------------------------


def test_protocol_version_header() -> None:
    validate_protocol_version_header({"MCP-Protocol-Version": V}, request("server/discover"))
    validate_protocol_version_header({"mcp-protocol-version": f" {V} "}, request("x"))
    with pytest.raises(HeaderMismatch, match="missing") as info:
        validate_protocol_version_header({}, request("x"))
    assert info.value.header == "MCP-Protocol-Version"
    message = request("x")
    message["params"]["_meta"] = {**META, "io.modelcontextprotocol/protocolVersion": "v999.0.0"}
    with pytest.raises(HeaderMismatch, match="v999.0.0"):
        validate_protocol_version_header({"MCP-Protocol-Version": V}, message)


# -- custom headers (conformance http-custom-header-server-validation) -------------------------


def custom(value: t.Any, header: str | None, params: t.Sequence[HeaderParam] = (REGION,)) -> None:
    headers = {"Mcp-Method": "tools/call", "Mcp-Name": "test_custom_header"}
    if header is not None:
        headers["Mcp-Param-Region"] = header
    arguments = {} if value is None else {"region": value}
    message = call("test_custom_header", arguments)
    validate_routing_headers(headers, message, tool_header_params={"test_custom_header": params})


@pytest.mark.parametrize(
    ("value", "header"),
    [
        ("Hello", "=?base64?SGVsbG8=?="),  # ServerAcceptsValidBase64
        ("SGVsbG8=", "SGVsbG8="),  # ServerLiteralMissingBase64Prefix
        ("=?base64?SGVsbG8=", "=?base64?SGVsbG8="),  # ServerLiteralMissingBase64Suffix
        ("us-west1", "us-west1"),
        ("us-west1", "  us-west1 "),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (None, None),  # argument absent: no header expected
    ],
)
def test_custom_header_accepted(value: t.Any, header: str | None) -> None:
    custom(value, header)


@pytest.mark.parametrize(
    ("value", "header", "match"),
    [
        ("Hello", "=?base64?SGVsbG8?=", "Base64"),  # ServerRejectsInvalidBase64Padding
        ("Hello", "=?base64?SGVs!!!bG8=?=", "Base64"),  # ServerRejectsInvalidBase64Chars
        ("test-value", None, "missing"),  # ServerRejectsMissingCustomHeader
        ("us-west1", "us-east1", "does not match"),
        ("Us-West1", "us-west1", "does not match"),
        ("x", "caf\xe9", "not allowed"),
        (None, "us-west1", "absent or null"),
    ],
)
def test_custom_header_rejected(value: t.Any, header: str | None, match: str) -> None:
    with pytest.raises(HeaderMismatch, match=match) as info:
        custom(value, header)
    assert info.value.header == "Mcp-Param-Region"


def test_custom_header_null_value_means_absent() -> None:
    headers = {"Mcp-Method": "tools/call", "Mcp-Name": "t"}
    validate_routing_headers(
        headers, call("t", {"region": None}), tool_header_params={"t": [REGION]}
    )


def test_custom_header_case_insensitive_name() -> None:
    headers = {"Mcp-Method": "tools/call", "Mcp-Name": "t", "MCP-PARAM-REGION": "eu"}
    validate_routing_headers(
        headers, call("t", {"region": "eu"}), tool_header_params={"t": [REGION]}
    )


@pytest.mark.parametrize(
    ("value", "header", "ok"),
    [
        (42, "42", True),
        (42, "42.0", True),
        (42, "4.2e1", True),
        (-7, "-7", True),
        (42.0, "42", True),
        (42, "43", False),
        (42, "0x2A", False),
        (42, "forty-two", False),
        (42, "", False),
        (0, "-0", True),
    ],
)
def test_integer_compared_numerically(value: int, header: str, ok: bool) -> None:
    param = HeaderParam(("region",), "Region", "integer")
    if ok:
        custom(value, header, [param])
    else:
        with pytest.raises(HeaderMismatch, match="does not match"):
            custom(value, header, [param])


def test_integer_outside_safe_range_rejected() -> None:
    param = HeaderParam(("region",), "Region", "integer")
    custom(2**53 - 1, str(2**53 - 1), [param])
    with pytest.raises(HeaderMismatch, match="safe integer"):
        custom(2**53, str(2**53), [param])


@pytest.mark.parametrize(
    ("value", "header", "ok"),
    [(True, "true", True), (False, "false", True), (True, "True", False), (False, "0", False)],
)
def test_boolean(value: bool, header: str, ok: bool) -> None:
    param = HeaderParam(("region",), "Region", "boolean")
    if ok:
        custom(value, header, [param])
    else:
        with pytest.raises(HeaderMismatch):
            custom(value, header, [param])


def test_non_primitive_body_left_to_argument_validation() -> None:
    custom({"nested": 1}, None)
    custom(["a"], "whatever")


def test_nested_path_and_callable_lookup() -> None:
    param = HeaderParam(("target", "zone"), "Zone", "string")
    lookup: dict[str, list[HeaderParam]] = {"t": [param]}
    message = call("t", {"target": {"zone": "z1"}})
    headers = {"Mcp-Method": "tools/call", "Mcp-Name": "t", "Mcp-Param-Zone": "z1"}
    validate_routing_headers(headers, message, tool_header_params=lookup.get)
    with pytest.raises(HeaderMismatch, match=r"arguments\.target\.zone"):
        validate_routing_headers(
            {"Mcp-Method": "tools/call", "Mcp-Name": "t"}, message, tool_header_params=lookup.get
        )
    # Unknown tools have no header parameters (the dispatcher reports them).
    validate_routing_headers(
        {"Mcp-Method": "tools/call", "Mcp-Name": "u"}, call("u", {}), tool_header_params=lookup.get
    )


def test_custom_headers_only_checked_for_tools_call() -> None:
    headers = {"Mcp-Method": "prompts/get", "Mcp-Name": "t"}
    validate_routing_headers(
        headers, request("prompts/get", name="t"), tool_header_params={"t": [REGION]}
    )


def test_header_param_properties() -> None:
    param = HeaderParam(("a", "b"), "Bee", "string")
    assert param.name == "b"
    assert param.header_name == "Mcp-Param-Bee"
    assert param.extract({"a": {"b": 1}}) == 1
    assert param.extract({"a": {}}) is None
    assert param.extract({"a": "not an object"}) is None
    assert param.extract(None) is None


# -- x-mcp-header declarations -----------------------------------------------------------------


def test_schema_conformance_fixture() -> None:
    schema = {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
    }
    assert validate_x_mcp_header_schema(schema) == [REGION]


def test_schema_several_nested_and_nullable() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": ["integer", "null"], "x-mcp-header": "Count"},
            "target": {
                "type": "object",
                "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}},
            },
            "plain": {"type": "string"},
        },
    }
    assert validate_x_mcp_header_schema(schema) == [
        REGION,
        HeaderParam(("count",), "Count", "integer"),
        HeaderParam(("target", "dry"), "Dry-Run", "boolean"),
    ]


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object"},
        {"type": "object", "additionalProperties": False},
        {"type": "object", "properties": {"x-mcp-header": {"type": "string"}}},  # a property name
        {
            "type": "object",
            "properties": {"a": {"type": "object", "default": {"x-mcp-header": "A"}}},
        },
        {"type": "object", "properties": {"a": True}},
        {  # the json_schema_2020_12_tool fixture
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object"}},
            "properties": {"address": {"$ref": "#/$defs/address"}},
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}},
            "then": {"required": ["phone"]},
            "additionalProperties": False,
        },
    ],
)
def test_schema_without_annotations(schema: dict[str, t.Any]) -> None:
    assert validate_x_mcp_header_schema(schema) == []


def _prop(**prop: t.Any) -> dict[str, t.Any]:
    return {"type": "object", "properties": {"p": prop}}


@pytest.mark.parametrize(
    ("schema", "match"),
    [
        (_prop(type="string", **{"x-mcp-header": ""}), "non-empty"),
        (_prop(type="string", **{"x-mcp-header": 5}), "non-empty"),
        (_prop(type="string", **{"x-mcp-header": "Has Space"}), "not a valid header name"),
        (_prop(type="string", **{"x-mcp-header": "A:B"}), "not a valid header name"),
        (_prop(type="string", **{"x-mcp-header": "A\r\nB"}), "not a valid header name"),
        (_prop(type="string", **{"x-mcp-header": "Région"}), "not a valid header name"),
        (_prop(type="number", **{"x-mcp-header": "N"}), "needs"),
        (_prop(type="object", **{"x-mcp-header": "O"}), "needs"),
        (_prop(type="array", **{"x-mcp-header": "A"}), "needs"),
        (_prop(**{"x-mcp-header": "T"}), "needs"),
        (_prop(type=["string", "integer"], **{"x-mcp-header": "T"}), "needs"),
        (_prop(type=["null"], **{"x-mcp-header": "T"}), "needs"),
        (
            {
                "type": "object",
                "properties": {
                    "a": {"type": "string", "x-mcp-header": "Region"},
                    "b": {"type": "string", "x-mcp-header": "REGION"},
                },
            },
            "duplicates",
        ),
        ({"type": "object", "x-mcp-header": "Root"}, "at /"),
        (
            {
                "type": "object",
                "properties": {
                    "l": {"type": "array", "items": {"type": "string", "x-mcp-header": "L"}},
                },
            },
            "/properties/l/items",
        ),
        (
            {
                "type": "object",
                "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}],
            },
            "/anyOf/0/properties/a",
        ),
        (
            {
                "type": "object",
                "$defs": {"d": {"type": "string", "x-mcp-header": "D"}},
                "properties": {"a": {"$ref": "#/$defs/d"}},
            },
            "/\\$defs/d",
        ),
        (
            {
                "type": "object",
                "then": {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}},
            },
            "/then",
        ),
        (
            {"type": "object", "additionalProperties": {"type": "string", "x-mcp-header": "A"}},
            "/additionalProperties",
        ),
        (
            {
                "type": "object",
                "patternProperties": {"^a/b$": {"type": "string", "x-mcp-header": "A"}},
            },
            "/patternProperties/\\^a~1b\\$",
        ),
    ],
)
def test_schema_rejected(schema: dict[str, t.Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        validate_x_mcp_header_schema(schema)


def test_header_name_tchars_allowed() -> None:
    schema = _prop(type="string", **{"x-mcp-header": "A1!#$%&'*+-.^_`|~z"})
    assert validate_x_mcp_header_schema(schema)[0].header == "A1!#$%&'*+-.^_`|~z"


def test_a_tool_header_with_an_underscore_is_refused_at_registration() -> None:
    """Gunicorn and Werkzeug drop ``Mcp-Param-Tenant_Id``: such a tool could never be called.

    Clients accept the name (a valid token), so only the server refuses it, at registration.
    """
    mcp = MCP(name="h", version="1")
    with pytest.raises(ValueError, match="underscore.*'Tenant-Id'"):

        @mcp.tool(headers={"tenant_id": "Tenant_Id"})
        def whoami(tenant_id: str) -> str:
            return tenant_id

    schema = _prop(type="string", **{"x-mcp-header": "P_1"})
    with pytest.raises(ValueError, match="underscore"):
        mcp.tool(input_schema=schema)(lambda arguments: "x")

    @mcp.tool(headers={"tenant_id": "Tenant-Id"})
    def tenant(tenant_id: str) -> str:
        return tenant_id

    assert mcp.registry.tools["tenant"].header_params[0].header_name == "Mcp-Param-Tenant-Id"


# -- mirrors_body: the fast path of the 2026-07-28 header checks -------------------------


def _environ(
    version: str | None = V, method: str | None = "tools/call", name: str | None = "add"
) -> dict[str, str]:
    environ: dict[str, str] = {}
    for key, value in (
        ("HTTP_MCP_PROTOCOL_VERSION", version),
        ("HTTP_MCP_METHOD", method),
        ("HTTP_MCP_NAME", name),
    ):
        if value is not None:
            environ[key] = value
    return environ


@pytest.mark.parametrize(
    ("environ", "name", "expected"),
    [
        (_environ(), "add", True),
        (_environ(name=None), None, True),  # a method without Mcp-Name
        (_environ(name=None), "add", False),  # missing: the validator names it
        (_environ(name="Add"), "add", False),
        (_environ(version=" " + V), V, False),  # would pass once stripped: the slow path says so
        (_environ(method="tools/call\t"), "add", False),
        (_environ(name=" add"), " add", False),  # a value with spaces is not bare
        (_environ(name="=?base64?YWRk?="), "=?base64?YWRk?=", False),  # a sentinel decodes
        (_environ(name="caf\u00e9"), "caf\u00e9", False),  # non-ASCII must be Base64
        (_environ(version="2025-11-25"), V, False),
    ],
)
def test_mirrors_body(environ: dict[str, str], name: str | None, expected: bool) -> None:
    assert mirrors_body(environ, "tools/call", V, name) is expected


@pytest.mark.parametrize("name", ["add", "a b", "x-y_z.1", "=?base64", "?=", "!"])
def test_mirrors_body_implies_the_validators_pass(name: str) -> None:
    """Where the fast path says yes, the general validators agree."""
    environ = _environ(name=name)
    message = call(name)
    if mirrors_body(environ, "tools/call", V, name):
        headers = WSGIHeaders(environ)
        validate_protocol_version_header(headers, message)
        validate_routing_headers(headers, message, tool_header_params={})
