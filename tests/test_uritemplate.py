from __future__ import annotations

import time
import typing as t

import pytest

from flask_mcp.uritemplate import URITemplate


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("test://template/{id}/data", "test://template/123/data", {"id": "123"}),
        ("files://{+path}", "files://a/b/c.txt", {"path": "a/b/c.txt"}),
        (
            "search://q{?query,limit}",
            "search://q?limit=5&query=hi%20x",
            {"query": "hi x", "limit": "5"},
        ),
        ("search://q{?query,limit}", "search://q?query=x", {"query": "x"}),
        ("search://q{?query,limit}", "search://q", {}),
        ("search://q{?query}", "search://q?query=", {"query": ""}),
        ("search://q{?query}", "search://q?query", {"query": ""}),
        ("search://q{?query}", "search://q?other=1&query=2", {"query": "2"}),
        ("search://q{?query}", "search://q?query=a+b", {"query": "a+b"}),
        ("a{?x}{&y}", "a?y=2&x=1", {"x": "1", "y": "2"}),
        ("a?k=1{&y}", "a?k=1&y=2", {"y": "2"}),
        ("a?k=1{&y}", "a?k=1", {}),
        ("u://{name}", "u://Jos%C3%A9", {"name": "José"}),
        ("u://{name}", "u://José", {"name": "José"}),
        ("u://{a}-{b}", "u://x-y", {"a": "x", "b": "y"}),
        ("u://{x,y}", "u://1,2", {"x": "1", "y": "2"}),
        ("u://{x,y}", "u://1", {"x": "1"}),
        ("u://{+a,b}", "u://x/y,z/w", {"a": "x/y", "b": "z/w"}),
        ("u://{+path}", "u://a%20b/c?d#e", {"path": "a b/c?d#e"}),
        ("u://x{#frag}", "u://x#a/b", {"frag": "a/b"}),
        ("u://x{#frag}", "u://x", {}),
        ("u://f{.ext}", "u://f.json", {"ext": "json"}),
        ("u://f{.ext}", "u://f.tar.gz", {"ext": "tar.gz"}),
        ("u://f{.a,b}", "u://f.1.2", {"a": "1", "b": "2"}),
        ("u://x{/a,b}", "u://x/1/2", {"a": "1", "b": "2"}),
        ("u://x{/a,b}", "u://x/1", {"a": "1"}),
        ("u://x{/a}", "u://x", {}),
        ("u://x{;a,b}", "u://x;b=2;a", {"a": "", "b": "2"}),
        ("u://x{;a}/rest", "u://x;a=1/rest", {"a": "1"}),
        ("u://x{/path*}", "u://x/a/b%2Fc", {"path": ["a", "b/c"]}),
        ("u://x{/path*}", "u://x/a", {"path": ["a"]}),
        ("u://x{?tag*}", "u://x?tag=1&tag=2", {"tag": ["1", "2"]}),
        ("u://x{?tag*}", "u://x?tag=1", {"tag": ["1"]}),
        ("u://{list*}", "u://a,b", {"list": ["a", "b"]}),
        ("u://{+list*}", "u://a/b,c", {"list": ["a/b", "c"]}),
        ("u://x{.parts*}", "u://x.a.b", {"parts": ["a", "b"]}),
        ("u://{x:3}", "u://abc", {"x": "abc"}),
        ("u://{x:3}", "u://ab", {"x": "ab"}),
        ("u://{x}/{x}", "u://a/a", {"x": "a"}),
        ("u://{+path}{?q}", "u://a/b?q=1", {"path": "a/b", "q": "1"}),
        ("u://{a.b}/{c_d}", "u://1/2", {"a.b": "1", "c_d": "2"}),
        ("plain://x", "plain://x", {}),
    ],
)
def test_match(template: str, uri: str, expected: dict[str, t.Any]) -> None:
    assert URITemplate(template).match(uri) == expected


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("test://template/{id}/data", "test://template//data"),
        ("test://template/{id}/data", "test://template/a/b/data"),
        ("test://template/{id}/data", "test://template/123/data/"),
        ("test://template/{id}/data", "other://template/123/data"),
        ("u://{name}", "u://a b"),
        ("u://{name}", "u://a,b"),
        ("u://{name}", "u://a?b"),
        ("u://{name}", "u://"),
        ("u://{x:3}", "u://abcd"),
        ("u://{x}/{x}", "u://a/b"),
        ("files://{+path}", "files://"),
        ("plain://x", "plain://y"),
        ("plain://x.y", "plain://xzy"),
    ],
)
def test_no_match(template: str, uri: str) -> None:
    assert URITemplate(template).match(uri) is None


def test_prefix_on_query_parameter() -> None:
    template = URITemplate("u://x{?q:2}")
    assert template.match("u://x?q=ab") == {"q": "ab"}
    assert template.match("u://x?q=abc") is None


def test_variables_and_is_template() -> None:
    template = URITemplate("u://{a}/{+b}{/c*}{?d,a}{&e:3}")
    assert template.variables == ("a", "b", "c", "d", "e")
    assert template.is_template
    assert template.template == "u://{a}/{+b}{/c*}{?d,a}{&e:3}"
    plain = URITemplate("config://app")
    assert plain.variables == ()
    assert not plain.is_template


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("u://{id", "Unbalanced '{'"),
        ("u://id}", "Unbalanced '}'"),
        ("u://{{id}}", "Unbalanced '{'"),
        ("u://{a{b}}", "Unbalanced '{'"),
        ("u://{}", "Empty expression"),
        ("u://{=x}", "reserved"),
        ("u://{|x}", "reserved"),
        ("u://{a-b}", "Invalid variable 'a-b'"),
        ("u://{a,}", "Invalid variable ''"),
        ("u://{x:0}", "Invalid variable 'x:0'"),
        ("u://{x:10000}", "Invalid variable"),
        ("u://{x:3*}", "Invalid variable"),
        ("u://{a..b}", "Invalid variable"),
        ("u://{ a}", "Invalid variable"),
    ],
)
def test_malformed_templates(template: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("|", r"\|")):
        URITemplate(template)


def test_expand() -> None:
    assert URITemplate("test://template/{id}/data").expand(id=123) == "test://template/123/data"
    assert URITemplate("files://{+path}").expand(path="a/b c") == "files://a/b%20c"
    assert URITemplate("u://x{/p*}{?q,n}").expand(p=["a", "b"], q="hi x") == "u://x/a/b?q=hi%20x"
    assert URITemplate("u://{var_dict}").expand(var_dict="v") == "u://v"


def test_expand_then_match_round_trips() -> None:
    template = URITemplate("u://{a}/{+b}/x{/c*}{?d,e}")
    values = {"a": "x y", "b": "p/q", "c": ["1", "2"], "d": "é", "e": "&"}
    assert template.match(template.expand(**values)) == values


def test_equality_and_repr() -> None:
    assert URITemplate("u://{a}") == URITemplate("u://{a}")
    assert URITemplate("u://{a}") != URITemplate("u://{b}")
    assert URITemplate("u://{a}") != "u://{a}"
    assert len({URITemplate("u://{a}"), URITemplate("u://{a}")}) == 1
    assert repr(URITemplate("u://{a}")) == "URITemplate('u://{a}')"
    assert str(URITemplate("u://{a}")) == "u://{a}"


@pytest.mark.parametrize("template", ["{+x*}!", "{.x*}!", "{x*}!", "{/x*}!", "{+a,b,c}!"])
def test_no_catastrophic_backtracking(template: str) -> None:
    uri = "a," * 2000 + ".a/" * 2000
    start = time.perf_counter()
    assert URITemplate(template).match(uri) is None
    assert time.perf_counter() - start < 1
