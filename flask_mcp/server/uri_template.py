"""Match URIs against RFC 6570 URI templates in linear time.

Resource templates such as ``files://{+path}`` are matched against the URIs that
clients read: :meth:`URITemplate.match` returns the variables, percent-decoded.
Expansion is not needed at runtime; the tests use the ``uritemplate`` package.

What an expression matches (levels 1 to 3 of RFC 6570 and the level 4 modifiers):

* ``{var}`` matches one or more unreserved or percent-encoded characters (no ``/``,
  ``?``, ``#`` or ``,``); ``{+var}`` and ``{#var}`` also match reserved characters
  such as ``/``.
* ``{.var}``, ``{/var}`` and ``{#var}`` are optional: when their operator character is
  absent the variable is absent from the result.
* ``{?x,y}``, ``{&x}`` and ``{;x}`` take named parameters in any order; missing ones
  are absent from the result and unknown ones are ignored.
* ``{var*}`` (explode) gives a list of the parts, e.g. ``{/path*}`` matches ``/a/b`` as
  ``["a", "b"]`` and ``{?tag*}`` matches ``?tag=a&tag=b`` as ``["a", "b"]``. Exploded
  associative arrays (``?k1=v1&k2=v2``) are not recognised.
* ``{var:3}`` (prefix) matches values of at most three characters.

With several variables in one expression (``{x,y}``) values are assigned from the left,
because expansion leaves undefined variables out. A variable used twice must have the
same value in both places.

How a URI is split among the expressions (RFC 6570 defines expansion only, and a URI
can often be split in several ways). The matcher never backtracks: each expression
costs a few forward passes (``str.find`` or ``str.rfind``, and regexes with one way to
match), so its time is O(length of the URI x number of expressions) for every template
it accepts.

1. The template's first literal text must begin the URI and its last literal text must
   end it.
2. A template has at most one *multi-segment* expression: ``{+x}``, ``{#x}`` or an
   exploded unnamed variable (``{x*}``, ``{.x*}``, ``{/x*}``).
3. Expressions before it (all of them, when there is none) are read from the left: each
   ends at the first place where the next literal text of the template begins or a
   character it cannot hold appears, whichever comes first. ``db://{s}.{t}.{c}`` splits
   ``db://a.b.c.d`` as ``s="a"``, ``t="b"``, ``c="c.d"``.
4. Expressions after it are read from the right: each begins just after the last
   occurrence of the literal text before it, or, for an expression with an operator
   character (``{.x}``, ``{/x}``, ``{;x}``, ``{?x}``, ``{&x}``), just after the last
   occurrence of that character. ``files://{+path}{.ext}`` splits ``files://a/b.tar.gz``
   as ``path="a/b.tar"``, ``ext="gz"``.
5. The multi-segment expression takes what the others leave between them.
6. An optional expression read from the left is present when its operator character is
   where it would start; one read from the right is present when the text after the
   last occurrence of its character is a value it can hold.

Registration refuses (:class:`ValueError`, saying how to fix the template) what these
rules cannot split in one pass: two multi-segment expressions; two expressions with no
literal text between them unless the second starts with an operator character that the
first cannot hold (``{a}{/b}`` is accepted, ``{a}{b}`` and ``{.a}{.b}`` are not) or, after
the multi-segment expression, unless the second has an operator character; after the
multi-segment expression, several values split by the expression's own character
(``{.a,b}``, ``{/a,b}``, ``{;a*}``, ``{&a,b}``, ``{?a}{&b}``); and an exploded variable
that is not the last of its expression (``{x*,y}``).

Before a handler sees them, decoded values are screened by
:class:`~flask_mcp.server.resource_security.ResourceSecurity`.
"""

from __future__ import annotations

import dataclasses
import re
import typing as t
import urllib.parse

_HEX = "%[0-9A-Fa-f]{2}"
_UNRESERVED = r"A-Za-z0-9\-._~\u0080-\U0010ffff"
_RESERVED = _UNRESERVED + r":/?#\[\]@!$&'()*+,;="


def _run(chars: str) -> re.Pattern[str]:
    """A regex for a run of ``chars`` and percent-encoded triplets (one way to match)."""
    return re.compile(rf"(?:[{chars}]|{_HEX})*")


_SIMPLE = _run(_UNRESERVED)
_SIMPLE_LIST = _run(_UNRESERVED + ",")
_PATH_LIST = _run(_UNRESERVED + "/")
_RESERVED_RUN = _run(_RESERVED)
_QUERY = re.compile("[^#]*")
_PARAMS = re.compile("[^/?#]*")

_VARSPEC = re.compile(
    rf"(?P<name>(?:\w|{_HEX})(?:\.?(?:\w|{_HEX}))*)(?::(?P<prefix>[1-9][0-9]{{0,3}})|(?P<explode>\*))?",
    re.ASCII,
)
_EXPRESSION = re.compile(r"\{([^{}]*)\}")
#: Operator -> (operator character, separator, named).
_OPERATORS: dict[str, tuple[str, str, bool]] = {
    "": ("", ",", False),
    "+": ("", ",", False),
    "#": ("#", ",", False),
    ".": (".", ".", False),
    "/": ("/", "/", False),
    ";": (";", ";", True),
    "?": ("?", "&", True),
    "&": ("&", "&", True),
}
_RESERVED_OPERATORS = "=,!@|"


class _Var(t.NamedTuple):
    name: str
    prefix: int | None
    explode: bool


@dataclasses.dataclass(eq=False)
class _Capture:
    """One expression, or a run of adjacent named ones (``{?x}{&y}``) read as one."""

    text: str
    operator: str
    variables: list[_Var]
    lead: str  # the operator character that starts the expansion, or ""
    sep: str
    named: bool
    run: re.Pattern[str]  # what the expansion may hold after ``lead``
    index: int = 0
    #: The characters it may start with: ``lead``, and ``&`` for ``{?x}{&y}`` without x.
    leads: str = ""

    def __post_init__(self) -> None:
        self.leads = self.lead

    @property
    def multi(self) -> bool:
        """Whether the expansion may span several path segments."""
        if self.operator in ("+", "#"):
            return True
        return not self.named and any(var.explode for var in self.variables)


#: How a capture read from the left finds its end: ``find`` the next literal,
#: take the ``run`` of characters it may hold (and stop earlier at ``literal`` if
#: given), or take everything up to the ``end`` of the region.
_Stop = tuple[t.Literal["find", "run", "end"], str]


class URITemplate:
    """An RFC 6570 URI template, compiled once for matching.

    :param template: The template, such as ``"files://{+path}"``.
    :raises ValueError: The template is malformed (unbalanced braces, an empty
        expression, an unknown or reserved operator, an invalid variable name) or
        cannot be matched in one pass (see the module documentation).
    """

    def __init__(self, template: str) -> None:
        self.template = template
        parts: list[str | _Capture] = []
        names: list[str] = []
        position = 0
        for m in _EXPRESSION.finditer(template):
            literal = self._literal(template, position, m.start())
            capture = self._compile(m[1], m.start())
            names.extend(var.name for var in capture.variables)
            previous = parts[-1] if parts and not literal else None
            if literal:
                parts.append(literal)
            if isinstance(previous, _Capture) and previous.named and capture.lead == previous.sep:
                previous.variables.extend(capture.variables)  # {?x}{&y}: one query
                previous.text += capture.text
                previous.leads += "" if capture.lead in previous.leads else capture.lead
            else:
                parts.append(capture)
            position = m.end()
        if tail := self._literal(template, position, len(template)):
            parts.append(tail)
        #: The variable names, in order of first appearance.
        self.variables: tuple[str, ...] = tuple(dict.fromkeys(names))
        self._captures = [part for part in parts if isinstance(part, _Capture)]
        #: Whether there are any expressions; ``False`` for a plain URI.
        self.is_template = bool(self._captures)
        for index, capture in enumerate(self._captures):
            capture.index = index
        self._check(parts)
        self._head = self._tail = ""
        if parts and isinstance(head := parts[0], str):
            self._head = head
            del parts[0]
        if parts and isinstance(last := parts[-1], str):
            self._tail = last
            del parts[-1]
        multi = next((part for part in self._captures if part.multi), None)
        split = parts.index(multi) if multi is not None else len(parts)
        self._multi = multi
        self._before = parts[:split]
        self._after = parts[split + 1 :]
        self._stops = [self._stop(k) for k in range(len(self._before))]
        self._queries = [c for c in self._captures if c.named and c.lead != ";"]

    @staticmethod
    def _literal(template: str, start: int, end: int) -> str:
        """Return literal text, refusing a stray brace."""
        text = template[start:end]
        for i, char in enumerate(text):
            if char in "{}":
                raise ValueError(
                    f"Unbalanced {char!r} at position {start + i} in URI template"
                    f" {template!r}. Close every '{{' with '}}' and do not nest them."
                )
        return text

    def _compile(self, body: str, position: int) -> _Capture:
        """Parse one expression."""
        where = f"in expression '{{{body}}}' at position {position} of {self.template!r}"
        if not body:
            raise ValueError(f"Empty expression {where}; put a variable name between braces.")
        operator = body[0] if body[0] in _OPERATORS else ""
        if body[0] in _RESERVED_OPERATORS:
            raise ValueError(
                f"The operator {body[0]!r} is reserved by RFC 6570 {where}; use one of"
                " + # . / ; ? & or none."
            )
        variables = []
        for spec in body[len(operator) :].split(","):
            m = _VARSPEC.fullmatch(spec)
            if m is None:
                raise ValueError(
                    f"Invalid variable {spec!r} {where}. Names use letters, digits, '_' and"
                    " '.', optionally followed by ':N' (a prefix length) or '*' (explode)."
                )
            prefix = int(m["prefix"]) if m["prefix"] else None
            variables.append(_Var(m["name"], prefix, bool(m["explode"])))
        lead, sep, named = _OPERATORS[operator]
        single = len(variables) == 1 and not variables[0].explode
        if named:
            run = _PARAMS if operator == ";" else _QUERY
        elif operator in ("+", "#"):
            run = _RESERVED_RUN
        elif operator == ".":
            run = _SIMPLE  # holds the dots that separate several values
        else:
            run = _SIMPLE if single else _PATH_LIST if operator == "/" else _SIMPLE_LIST
        if not named and any(var.explode for var in variables[:-1]):
            raise ValueError(
                f"The exploded variable must be the last one {where}: its list takes every"
                " remaining value. Move it to the end, e.g. '{x,list*}'."
            )
        return _Capture(f"{{{body}}}", operator, variables, lead, sep, named, run)

    def _check(self, parts: list[str | _Capture]) -> None:
        """Refuse what the one-pass split cannot match (see the module documentation)."""
        multi = [capture for capture in self._captures if capture.multi]
        if len(multi) > 1:
            raise ValueError(
                f"URI template {self.template!r} has more than one multi-segment expression"
                f" ({', '.join(c.text for c in multi)}): a URI could be split between them in"
                " more than one way. Keep one; make the others single-segment, e.g. '{x}'"
                " instead of '{+x}' or '{/x}' instead of '{/x*}'."
            )
        after = False
        for i, part in enumerate(parts):
            if not isinstance(part, _Capture):
                continue
            previous = parts[i - 1] if i else None
            if isinstance(previous, _Capture) and (
                not part.lead or (not after and any(map(previous.run.fullmatch, part.leads)))
            ):
                names = ",".join(var.name for var in previous.variables + part.variables)
                join = f" or join them as '{{{part.operator}{names}}}'"
                raise ValueError(
                    f"In URI template {self.template!r}, {previous.text} and {part.text} have"
                    " no literal text between them, so a URI could be split between them in"
                    " more than one way. Put literal text between them (e.g. '/' or '-')"
                    f"{join if part.operator == previous.operator else ''}."
                )
            if after and (
                part.leads != part.lead
                or (
                    part.lead == part.sep and (len(part.variables) > 1 or part.variables[0].explode)
                )
            ):
                raise ValueError(
                    f"In URI template {self.template!r}, {part.text} comes after the"
                    f" multi-segment expression {multi[0].text} and holds several values"
                    f" separated by {part.sep!r}, so the split is ambiguous. Use one variable"
                    " there (for a query, one '{?x,y}' expression), or move the expression"
                    " before the multi-segment one."
                )
            after = after or part.multi

    def _stop(self, k: int) -> _Stop:
        """How the capture at ``self._before[k]`` read from the left finds its end."""
        following = self._before[k + 1 :]
        if not following:
            return ("run", "") if self._multi is not None else ("end", "")
        if isinstance(following[0], str):
            return ("find", following[0])
        literal = next((part for part in following if isinstance(part, str)), "")
        return ("run", literal)

    def match(self, uri: str) -> dict[str, t.Any] | None:
        """Extract the variables from a URI, or return ``None`` if it does not match.

        Values are percent-decoded strings, or lists of strings for exploded variables.
        Variables that the URI leaves out (optional parts, query parameters) are absent.
        Time is linear in ``len(uri)`` for each expression: nothing backtracks.
        """
        if not self._captures:
            return {} if uri == self.template else None
        low, high = len(self._head), len(uri) - len(self._tail)
        if high < low or not uri.startswith(self._head) or not uri.endswith(self._tail):
            return None
        spans: dict[int, tuple[int, int]] = {}
        limit = self._scan_right(uri, low, high, spans)
        if limit is None:
            return None
        position = self._scan_left(uri, low, limit, spans)
        if position is None:
            return None
        multi = self._multi
        if multi is None:
            if position != limit:
                return None
        elif multi.lead and position == limit:
            pass  # an optional {#x} or {/x*} that the URI leaves out
        else:
            start = position + 1 if multi.lead else position
            if (multi.lead and uri[position] != multi.lead) or not multi.run.fullmatch(
                uri, start, limit
            ):
                return None
            spans[multi.index] = (start, limit)
        return self._values(uri, spans)

    def _scan_right(
        self, uri: str, low: int, position: int, spans: dict[int, tuple[int, int]]
    ) -> int | None:
        """Place the parts after the multi-segment expression, from the right."""
        after = self._after
        for k in range(len(after) - 1, -1, -1):
            part = after[k]
            if isinstance(part, str):
                position -= len(part)
                if position < low or not uri.startswith(part, position):
                    return None
                continue
            # The literal before it (registration guarantees one when there is no lead).
            anchor = part.lead or t.cast(str, after[k - 1])
            found = uri.rfind(anchor, low, position)
            start = found + len(anchor)
            if found >= 0 and part.run.fullmatch(uri, start, position):
                spans[part.index] = (start, position)
                position = found if part.lead else start
            elif not part.lead:
                return None
        return position

    def _scan_left(
        self, uri: str, position: int, limit: int, spans: dict[int, tuple[int, int]]
    ) -> int | None:
        """Place the parts before the multi-segment expression, from the left."""
        for part, (how, literal) in zip(self._before, self._stops, strict=True):
            if isinstance(part, str):
                if position + len(part) > limit or not uri.startswith(part, position):
                    return None
                position += len(part)
                continue
            if part.leads:
                if position >= limit or uri[position] not in part.leads:
                    continue  # optional and absent
                position += 1
            if how == "find":
                end = uri.find(literal, position, limit)
                if end < 0:
                    return None
            elif how == "end":
                end = limit
            else:
                end = t.cast("re.Match[str]", part.run.match(uri, position, limit)).end()
                found = uri.find(literal, position, limit) if literal else -1
                end = found if 0 <= found < end else end
            if not part.run.fullmatch(uri, position, end):
                return None
            spans[part.index] = (position, end)
            position = end
        return position

    def _values(self, uri: str, spans: dict[int, tuple[int, int]]) -> dict[str, t.Any] | None:
        """Decode the placed expressions into variable values."""
        query: list[tuple[str, str]] = []
        for capture in self._queries:
            if (span := spans.get(capture.index)) is not None:
                query.extend(_pairs(uri[span[0] : span[1]], "&"))
        result: dict[str, t.Any] = {}
        for capture in self._captures:
            span = spans.get(capture.index)
            if capture.named:
                if capture.lead != ";":
                    pairs = query
                else:
                    pairs = _pairs(uri[span[0] : span[1]], ";") if span is not None else []
                for var in capture.variables:
                    values = [_decode(v) for k, v in pairs if k == var.name]
                    if values and not _assign(result, var, values if var.explode else values[0]):
                        return None
                continue
            if span is None:
                continue
            split = _split(capture, uri[span[0] : span[1]])
            if split is None:
                return None
            for var, value in zip(capture.variables, split, strict=False):  # trailing ones absent
                if not _assign(result, var, value):
                    return None
        return result

    def __repr__(self) -> str:
        return f"URITemplate({self.template!r})"

    def __str__(self) -> str:
        return self.template

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, URITemplate):
            return NotImplemented
        return self.template == other.template

    def __hash__(self) -> int:
        return hash(self.template)


def _split(capture: _Capture, body: str) -> list[t.Any] | None:
    """Split an unnamed expression's text into decoded values, one per variable."""
    variables = capture.variables
    count = len(variables)
    if count == 1 and not variables[0].explode:
        parts = [body]
    elif capture.operator in ("+", "#") and not variables[-1].explode:
        parts = body.split(",", count - 1)  # only the last value may hold commas
    else:
        parts = body.split(capture.sep)
        if not variables[-1].explode and len(parts) > count:
            return None
    if not capture.lead and not parts[0]:
        return None  # the first value of {x} or {+x} is one character or more
    values: list[t.Any] = [_decode(part) for part in parts[: count - 1]]
    if variables[-1].explode:
        if len(parts) >= count:
            values.append([_decode(part) for part in parts[count - 1 :]])
    elif len(parts) >= count:
        values.append(_decode(parts[count - 1]))
    return values


def _decode(text: str) -> str:
    """Percent-decode a value (``+`` stays a plus sign, as RFC 6570 expands spaces)."""
    return urllib.parse.unquote(text) if "%" in text else text


def _pairs(section: str, separator: str) -> list[tuple[str, str]]:
    """Split ``a=1&b`` into ``[("a", "1"), ("b", "")]``, decoding the names."""
    pairs = []
    for item in section.split(separator):
        if item:
            name, _, value = item.partition("=")
            pairs.append((_decode(name), value))
    return pairs


def _assign(result: dict[str, t.Any], var: _Var, value: t.Any) -> bool:
    """Store a variable's value; ``False`` if it breaks a prefix or a repeated name."""
    if var.prefix is not None and isinstance(value, str) and len(value) > var.prefix:
        return False
    if var.name in result and result[var.name] != value:
        return False
    result[var.name] = value
    return True


__all__ = [
    "URITemplate",
]
