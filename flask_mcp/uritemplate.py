"""Match URIs against RFC 6570 URI templates and expand templates.

Resource templates such as ``files://{+path}`` are matched against the URIs that
clients read: :meth:`URITemplate.match` returns the variables, percent-decoded.
Expansion is left to the ``uritemplate`` package.

Matching covers levels 1 to 3 of RFC 6570 and the level 4 modifiers:

* ``{var}`` matches one or more unreserved or percent-encoded characters (no ``/``,
  ``?``, ``#`` or ``,``); ``{+var}`` and ``{#var}`` also match reserved characters
  such as ``/``.
* ``{.var}``, ``{/var}`` and ``{#var}`` are optional: when their prefix character is
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
"""

from __future__ import annotations

import re
import typing as t
import urllib.parse

import uritemplate

_PCT = r"%[0-9A-Fa-f]{2}"
_UNRESERVED = rf"(?:[A-Za-z0-9\-._~\u0080-\U0010ffff]|{_PCT})"
_RESERVED_NO_COMMA = rf"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+;=\u0080-\U0010ffff]|{_PCT})"
_UNRESERVED_NO_DOT = rf"(?:[A-Za-z0-9\-_~\u0080-\U0010ffff]|{_PCT})"
_RESERVED = rf"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=\u0080-\U0010ffff]|{_PCT})"
_VARSPEC = re.compile(
    rf"(?P<name>(?:\w|{_PCT})(?:\.?(?:\w|{_PCT}))*)(?::(?P<prefix>[1-9][0-9]{{0,3}})|(?P<explode>\*))?",
    re.ASCII,
)
_EXPRESSION = re.compile(r"\{([^{}]*)\}")
#: Operator -> (first character, separator, named).
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


class _Expression(t.NamedTuple):
    operator: str
    variables: tuple[_Var, ...]
    groups: tuple[str, ...]  # one regex group per variable, or one for a named section


class URITemplate:
    """An RFC 6570 URI template, compiled once for matching and expansion.

    :param template: The template, such as ``"files://{+path}"``.
    :raises ValueError: The template is malformed: unbalanced braces, an empty
        expression, an unknown or reserved operator, or an invalid variable name.
    """

    def __init__(self, template: str) -> None:
        self.template = template
        self._expressions: list[_Expression] = []
        pattern = []
        position = 0
        for m in _EXPRESSION.finditer(template):
            pattern.append(self._literal(template, position, m.start()))
            pattern.append(self._compile(m[1], m.start()))
            position = m.end()
        pattern.append(self._literal(template, position, len(template)))
        self._regex = re.compile("".join(pattern))
        names = (var.name for e in self._expressions for var in e.variables)
        #: The variable names, in order of first appearance.
        self.variables: tuple[str, ...] = tuple(dict.fromkeys(names))
        #: Whether there are any expressions; ``False`` for a plain URI.
        self.is_template = bool(self._expressions)
        self._expander = uritemplate.URITemplate(template)

    @staticmethod
    def _literal(template: str, start: int, end: int) -> str:
        """Escape literal text, refusing a stray brace."""
        text = template[start:end]
        for i, char in enumerate(text):
            if char in "{}":
                raise ValueError(
                    f"Unbalanced {char!r} at position {start + i} in URI template"
                    f" {template!r}. Close every '{{' with '}}' and do not nest them."
                )
        return re.escape(text)

    def _compile(self, body: str, position: int) -> str:
        """Parse one expression and return the regex that matches its expansion."""
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
        index = len(self._expressions)
        first, separator, named = _OPERATORS[operator]
        if named:
            group = f"e{index}"
            self._expressions.append(_Expression(operator, tuple(variables), (group,)))
            rest = "[^#]*" if operator != ";" else "[^/?#]*"
            return f"(?:{re.escape(first)}(?P<{group}>{rest}))?"
        groups = tuple(f"e{index}v{i}" for i in range(len(variables)))
        self._expressions.append(_Expression(operator, tuple(variables), groups))
        reserved = operator in ("+", "#")
        if reserved:  # only the last variable may hold commas: no ambiguous splits
            chars = _RESERVED if len(variables) == 1 else _RESERVED_NO_COMMA
        else:
            one_dot = operator == "." and (len(variables) > 1 or variables[0].explode)
            chars = _UNRESERVED_NO_DOT if one_dot else _UNRESERVED
        sep = re.escape(separator)

        def value(var: _Var, group: str, last: bool) -> str:
            repeat = "+" if group == groups[0] and not first else "*"
            if reserved:
                return f"(?P<{group}>{_RESERVED if last else chars}{repeat}?)"
            more = f"(?:{sep}{chars}*)*" if var.explode else ""
            return f"(?P<{group}>{chars}{repeat}{more})"

        tail = ""
        for var, group in reversed(list(zip(variables[1:], groups[1:], strict=True))):
            tail = f"(?:{sep}{value(var, group, group == groups[-1])}{tail})?"
        regex = value(variables[0], groups[0], len(groups) == 1) + tail
        return f"(?:{re.escape(first)}{regex})?" if first else regex

    def match(self, uri: str) -> dict[str, t.Any] | None:
        """Extract the variables from a URI, or return ``None`` if it does not match.

        Values are percent-decoded strings, or lists of strings for exploded variables.
        Variables that the URI leaves out (optional parts, query parameters) are absent.
        """
        m = self._regex.fullmatch(uri)
        if m is None:
            return None
        query: list[tuple[str, str]] = []
        for expression in self._expressions:
            if (
                expression.operator in ("?", "&")
                and (section := m[expression.groups[0]]) is not None
            ):
                query.extend(_pairs(section, "&"))
        result: dict[str, t.Any] = {}
        for expression in self._expressions:
            op = expression.operator
            if op in (";", "?", "&"):
                section = m[expression.groups[0]]
                pairs = query if op != ";" else _pairs(section or "", ";")
                for var in expression.variables:
                    values = [_decode(v) for k, v in pairs if k == var.name]
                    if values and not _assign(result, var, values if var.explode else values[0]):
                        return None
                continue
            separator = _OPERATORS[op][1]
            for var, group in zip(expression.variables, expression.groups, strict=True):
                raw = m[group]
                if raw is None:
                    continue
                value = [_decode(p) for p in raw.split(separator)] if var.explode else _decode(raw)
                if not _assign(result, var, value):
                    return None
        return result

    def expand(self, **values: t.Any) -> str:
        """Expand the template with the given variable values, as RFC 6570 says."""
        return str(self._expander.expand(values))

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
