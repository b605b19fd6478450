from __future__ import annotations

import json
import random
import string
import subprocess
import sys
import textwrap
import typing as t

import pytest
import uritemplate

from flask_mcp import ResourceSecurity
from flask_mcp.server.uri_template import URITemplate


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
        ("a{?x}{&y}", "a&y=2", {"y": "2"}),
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
        # The split rules of the module docstring.
        ("db://{s}.{t}.{c}", "db://a.b.c.d", {"s": "a", "t": "b", "c": "c.d"}),
        ("a://{x}-{y}-{z}/end", "a://1-2-3-4/end", {"x": "1", "y": "2", "z": "3-4"}),
        ("a://{x}-{y}.json", "a://1-2.json.json", {"x": "1", "y": "2.json"}),
        ("files://{+path}{.ext}", "files://a/b.tar.gz", {"path": "a/b.tar", "ext": "gz"}),
        ("files://{+path}{.ext}", "files://a.d/b", {"path": "a.d/b"}),
        ("u://{+dir}/{name}.{ext}", "u://x/y/z.q.txt", {"dir": "x/y", "name": "z.q", "ext": "txt"}),
        ("u://{+path}/meta", "u://a/meta/b/meta", {"path": "a/meta/b"}),
        ("u://{a}{/b}-end", "u://x-end", {"a": "x"}),
        ("u://{a}{/b}-end", "u://x/y-end", {"a": "x", "b": "y"}),
        ("u://x{/a}{/p*}", "u://x/1/2/3", {"a": "1", "p": ["2", "3"]}),
        ("u://x{/a}{/b}", "u://x/1", {"a": "1"}),
        ("u://{+p}{?q,limit}", "u://a/b?x?limit=3&q=x", {"p": "a/b?x", "q": "x", "limit": "3"}),
        ("u://{x,y*}", "u://1,2,3", {"x": "1", "y": ["2", "3"]}),
        ("u://{x,y*}", "u://1", {"x": "1"}),
        ("u://{+a,b}", "u://x,y,z", {"a": "x", "b": "y,z"}),
        ("u://{/p*}{?q}", "u:///a/b?q=1", {"p": ["a", "b"], "q": "1"}),
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
        ("u://{name}", "u://a%2"),
        ("u://{x:3}", "u://abcd"),
        ("u://{x}/{x}", "u://a/b"),
        ("files://{+path}", "files://"),
        ("plain://x", "plain://y"),
        ("plain://x.y", "plain://xzy"),
        ("u://{x,y}", "u://1,2,3"),
        ("u://{a}-{b}", "u://x"),
        ("u://{a}-{b}", "u://-y"),
        ("a://{x}/end", "a://end"),
        ("u://{+path}/meta", "u:///meta"),
        ("u://x{/path*}", "u://xa/b"),
        ("u://{+dir}/{name}.{ext}", "u://x/y/z"),
        ("u://{/p*}", "u://a"),
    ],
)
def test_no_match(template: str, uri: str) -> None:
    assert URITemplate(template).match(uri) is None


def test_prefix_on_query_parameter() -> None:
    template = URITemplate("u://x{?q:2}")
    assert template.match("u://x?q=ab") == {"q": "ab"}
    assert template.match("u://x?q=abc") is None


def test_variables_and_is_template() -> None:
    # Was "u://{a}/{+b}{/c*}{?d,a}{&e:3}": two multi-segment expressions, now refused
    # (test_ambiguous_templates_are_refused), and {?d,a}{&e:3} after {/c*} is too.
    template = URITemplate("u://{a}/{b}{/c*}{?d,a,e:3}")
    assert template.variables == ("a", "b", "c", "d", "e")
    assert template.is_template
    assert template.template == "u://{a}/{b}{/c*}{?d,a,e:3}"
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


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("u://{+a}/{+b}", r"more than one multi-segment expression \({\+a}, {\+b}\)"),
        ("u://{a}/{+b}{/c*}", r"more than one multi-segment expression \({\+b}, {/c\*}\)"),
        ("u://{/a*}/x/{#f}", "more than one multi-segment"),
        ("u://{x*}-{y*}", "more than one multi-segment"),
        ("u://{a}{b}", "{a} and {b} have no literal text between them"),
        ("u://{.a}{.b}", r"{\.a} and {\.b} have no literal text between them.*'{\.a,b}'"),
        ("u://{a}{+b}", "Put literal text between them"),
        ("u://{+a}{b}", "Put literal text between them"),
        ("u://{?a}{/b}", "no literal text between them"),
        ("u://{+a}{.b,c}", r"after the multi-segment expression {\+a}.*Use one variable"),
        ("u://{+p}{&a,b}", "holds several values separated by '&'"),
        ("u://{+p}{;a*}", "holds several values separated by ';'"),
        ("u://{+p}{?a}{&b}", r"one '{\?x,y}' expression"),
        ("u://{x*,y}", "exploded variable must be the last one"),
    ],
)
def test_ambiguous_templates_are_refused(template: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        URITemplate(template)


def test_equality_and_repr() -> None:
    assert URITemplate("u://{a}") == URITemplate("u://{a}")
    assert URITemplate("u://{a}") != URITemplate("u://{b}")
    assert URITemplate("u://{a}") != "u://{a}"
    assert len({URITemplate("u://{a}"), URITemplate("u://{a}")}) == 1
    assert repr(URITemplate("u://{a}")) == "URITemplate('u://{a}')"
    assert str(URITemplate("u://{a}")) == "u://{a}"


# -- round trips: match(expand(values)) == values ---------------------------------------

ANY = string.ascii_letters + string.digits + "-._~ /?#[]@!$&'()*+,;=%é日\u00a0\n"
# uritemplate's {+x} leaves spaces, '%' and controls unencoded, so those stay out of it.
RESERVED = string.ascii_letters + string.digits + "-._~:/?#[]@!$&'()*+,;=é"

Values = dict[str, t.Any]


def text(rng: random.Random, chars: str = ANY, without: str = "", size: int = 8) -> str:
    """A non-empty random string of ``chars`` minus ``without``."""
    pool = [c for c in chars if c not in without]
    return "".join(rng.choice(pool) for _ in range(rng.randint(1, size)))


def words(rng: random.Random, without: str = "") -> list[str]:
    return [text(rng, without=without) for _ in range(rng.randint(1, 4))]


def maybe(rng: random.Random, value: t.Any) -> t.Any:
    return value if rng.random() < 0.7 else None


def plus_path_with_extension(rng: random.Random) -> Values:
    ext = maybe(rng, text(rng, without="."))
    # Without an extension the last segment must not look like one: "a.b" would split.
    path = text(rng, RESERVED, without="" if ext else ".")
    return {"path": path, "ext": ext}


def slash_then_list(rng: random.Random) -> Values:
    a = maybe(rng, text(rng))
    # With {/a} absent, "/1/2" is a="1", p=["2"]: a list needs {/a} before it.
    return {"a": a, "p": maybe(rng, words(rng)) if a is not None else None}


#: Template -> values generator. Each generator leaves out only what the template
#: cannot tell apart by the rules of the module docstring (e.g. a '-' in {x} of
#: "{x}-{y}"), since expansion leaves unreserved characters unencoded.
ROUND_TRIPS: dict[str, t.Callable[[random.Random], Values]] = {
    "db://{schema}.{table}.{column}": lambda r: {
        "schema": text(r, without="."),
        "table": text(r, without="."),
        "column": text(r),
    },
    "a://{x}-{y}-{z}/end": lambda r: {
        "x": text(r, without="-"),
        "y": text(r, without="-"),
        "z": text(r),
    },
    "files://{+path}": lambda r: {"path": text(r, RESERVED, size=20)},
    "files://{+path}{.ext}": plus_path_with_extension,
    "u://{+path}{?q,limit}": lambda r: {
        "path": text(r, RESERVED, without="?"),
        "q": maybe(r, text(r)),
        "limit": maybe(r, text(r, string.digits)),
    },
    "u://x{/path*}{?tag*}": lambda r: {"path": maybe(r, words(r)), "tag": maybe(r, words(r))},
    "git://{repo}/diff/{+range}": lambda r: {"repo": text(r), "range": text(r, RESERVED)},
    "u://{x,y}": lambda r: {"x": text(r), "y": maybe(r, text(r))},
    "u://x{;a,b}": lambda r: {"a": maybe(r, text(r)), "b": maybe(r, text(r))},
    "u://f{.a,b}": lambda r: {"a": text(r, without="."), "b": maybe(r, text(r, without="."))},
    "u://{+a,b}/x": lambda r: {"a": text(r, RESERVED, without=","), "b": text(r, RESERVED)},
    "u://{a}{/b}-end": lambda r: {"a": text(r, without="-"), "b": maybe(r, text(r, without="-"))},
    "u://{+path}/meta": lambda r: {"path": text(r, RESERVED) + r.choice(["", "/meta"])},
    "u://{x:3}/{y}": lambda r: {"x": text(r, size=3), "y": text(r)},
    "search://q{?query,limit}": lambda r: {"query": maybe(r, text(r)), "limit": maybe(r, "5")},
    "u://x{#frag}": lambda r: {"frag": maybe(r, text(r, RESERVED))},
    "u://{list*}": lambda r: {"list": words(r)},
    "u://{+dir}/{name}.{ext}": lambda r: {
        "dir": text(r, RESERVED),
        "name": text(r),
        "ext": text(r, without="."),
    },
    "test://template/{id}/data": lambda r: {"id": text(r)},
    "u://{a}/{b}/{c}": lambda r: {"a": text(r), "b": text(r), "c": text(r)},
    "u://{a}{?x}{&y}": lambda r: {"a": text(r), "x": maybe(r, text(r)), "y": maybe(r, text(r))},
    "u://x{/a}{/p*}": slash_then_list,
    "u://{a}/{b}/x{/c*}{?d,e}": lambda r: {
        "a": text(r),
        "b": text(r),
        "c": maybe(r, words(r)),
        "d": maybe(r, text(r)),
        "e": maybe(r, text(r)),
    },
}


@pytest.mark.parametrize("template", list(ROUND_TRIPS))
def test_expand_then_match_round_trips(template: str) -> None:
    rng = random.Random(template)  # reproducible per template
    compiled, expander = URITemplate(template), uritemplate.URITemplate(template)
    for _ in range(300):
        values = {k: v for k, v in ROUND_TRIPS[template](rng).items() if v is not None}
        uri = expander.expand(values)
        assert compiled.match(uri) == values, (uri, values)


def test_round_trip_of_the_former_expand_test() -> None:
    # Formerly "u://{a}/{+b}/x{/c*}{?d,e}" (two multi-segment expressions, now refused).
    template = "u://{a}/{b}/x{/c*}{?d,e}"
    values = {"a": "x y", "b": "p/q", "c": ["1", "2"], "d": "é", "e": "&"}
    assert URITemplate(template).match(uritemplate.expand(template, values)) == values


@pytest.mark.parametrize("template", list(ROUND_TRIPS))
def test_garbage_never_raises(template: str) -> None:
    rng = random.Random(f"garbage {template}")
    compiled = URITemplate(template)
    pieces = ["/", ".", "-", "?", "&", "=", "#", ",", ";", "%", "%2", "%41", "a", "é", "end"]
    prefix = template.split("{", 1)[0]
    for _ in range(300):
        uri = prefix + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        result = compiled.match(uri)
        assert result is None or isinstance(result, dict)


# -- no backtracking: a URI that a regex matcher takes hours on finishes here -------------

#: Seconds a subprocess may take before the test fails: a hang guard for CI, not a speed
#: assertion (each case takes milliseconds; the former regex matcher took 19 s on 2 KB).
HANG_GUARD = 60
SIZE = 64 * 1024

MATCH_IN_SUBPROCESS = textwrap.dedent(
    """
    import json, sys
    from flask_mcp.server.uri_template import URITemplate
    pairs = json.loads(sys.stdin.read())
    print(json.dumps([URITemplate(template).match(uri) for template, uri in pairs]))
    """
)
ANY_RESULT = object()
MIXED = "a," * (SIZE // 10) + ".a/" * (SIZE // 5)
DB = "db://{schema}.{table}.{column}"
DASH = "a://{x}-{y}-{z}/end"


def fill(head: str, unit: str, tail: str) -> str:
    """``head + unit * n + tail``, SIZE characters long or just under."""
    return head + unit * ((SIZE - len(head) - len(tail)) // len(unit)) + tail


def filled(head: str, unit: str, tail: str) -> str:
    return fill(head, unit, tail)[len(head) : -len(tail) or None]


@pytest.mark.parametrize(
    "cases",
    [
        [
            (DB, fill("db://", "a.", "!"), None),
            (DB, fill("db://", "a.", ""), {"schema": "a", "table": "a"}),
            (DB, fill("db://", "a", ".b.c"), {"schema": filled("db://", "a", ".b.c")}),
        ],
        [
            (DASH, fill("a://", "a-", "!/end"), None),
            (DASH, fill("a://", "-", "/end"), None),
            (DASH, fill("a://", "a-", "a/end"), {"x": "a", "y": "a"}),
        ],
        [  # the inputs of the former regex matcher's backtracking test, 64 KB long
            (template, uri, ANY_RESULT)
            for template in ("{+x*}!", "{.x*}!", "{x*}!", "{/x*}!", "{+a,b,c}!")
            for uri in (MIXED, MIXED + "!", MIXED + " !")
        ],
    ],
    ids=["db", "dashes", "former"],
)
def test_long_uris_finish(cases: list[tuple[str, str, t.Any]]) -> None:
    """A 64 KB URI against templates that make a backtracking matcher run for hours."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", MATCH_IN_SUBPROCESS],
            input=json.dumps([[template, uri] for template, uri, _ in cases]),
            capture_output=True,
            text=True,
            timeout=HANG_GUARD,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"Matching {SIZE}-character URIs against {cases[0][0]!r} did not finish.")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    for (_, _, expected), result in zip(cases, results, strict=True):
        if expected is ANY_RESULT:
            assert result is None or isinstance(result, dict)
        elif expected is None:
            assert result is None
        else:  # the given variables, and the others cover the rest of the URI
            assert result is not None and expected.items() <= result.items()
            assert len(json.dumps(result)) > SIZE // 2


# -- ResourceSecurity ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("a\0b", "holds a NUL character"),
        ("..", "holds a '..' path segment"),
        ("../etc/passwd", "holds a '..' path segment"),
        ("a/../b", "holds a '..' path segment"),
        ("a\\..\\b", "holds a '..' path segment"),
        ("a/..", "holds a '..' path segment"),
        ("/etc/passwd", "is an absolute path"),
        ("\\\\server\\share", "is an absolute path"),
        ("C:", "is an absolute path"),
        ("c:\\windows", "is an absolute path"),
        ("C:foo", "is an absolute path"),
    ],
)
def test_security_refuses(value: str, reason: str) -> None:
    assert ResourceSecurity().validate({"x": "fine", "path": value}) == ("path", reason)
    assert ResourceSecurity().validate({"path": ["ok", value]}) == ("path", reason)
    assert ResourceSecurity(exempt_params={"path"}).validate({"path": value}) is None


@pytest.mark.parametrize(
    "value", ["", "a", "a/b", "v1..v2", "HEAD~3..HEAD", "...", "a/.../b", ".", "./a", "é:", "1:2"]
)
def test_security_accepts(value: str) -> None:
    assert ResourceSecurity().validate({"path": value, "list": [value]}) is None


def test_security_switches() -> None:
    assert ResourceSecurity(reject_null_bytes=False).validate({"p": "a\0"}) is None
    assert ResourceSecurity(reject_path_traversal=False).validate({"p": "a/../b"}) is None
    assert ResourceSecurity(reject_absolute_paths=False).validate({"p": "/etc"}) is None


def test_security_names_are_checked() -> None:
    template = URITemplate("git://{repo}/diff/{+range}")
    ResourceSecurity(exempt_params={"range"}).check_template(template)
    with pytest.raises(ValueError, match="'rnage', which is not a variable.*repo, range"):
        ResourceSecurity(exempt_params={"rnage"}).check_template(template)
    with pytest.raises(TypeError, match=r"exempt_params=\{'range'\}"):
        ResourceSecurity(exempt_params="range")  # type: ignore[arg-type]
