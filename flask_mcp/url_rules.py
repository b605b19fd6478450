"""The URL variables of Flask rules: ``/t/<tenant>/mcp``, ``/pets/<int:pet_id>``."""

from __future__ import annotations

import re
import typing as t

#: A URL variable as Werkzeug's rule syntax writes it: ``<name>``, ``<int:name>``,
#: ``<string(length=2):name>``; group 1 is the converter (``None`` for the default one),
#: group 2 the variable's name.
VARIABLE = re.compile(r"<(?:([A-Za-z_]\w*)(?:\([^)]*\))?:)?([A-Za-z_]\w*)>")


def variables(rule: str) -> list[str]:
    """Return the names of the URL variables of ``rule``, in order."""
    return [match[2] for match in VARIABLE.finditer(rule)]


def has_variables(rule: str) -> bool:
    """Tell whether ``rule`` has any URL variable."""
    return "<" in rule and VARIABLE.search(rule) is not None


def substitute(rule: str, replace: t.Callable[[str | None, str], str | None]) -> str:
    """Return ``rule`` with each URL variable replaced by ``replace(converter, name)``.

    :param replace: given the variable's converter (``None`` for the default one) and
        its name, returns the text to put in its place, or ``None`` to leave the
        variable as it is written.
    """

    def replaced(match: re.Match[str]) -> str:
        text = replace(match[1], match[2])
        return match[0] if text is None else text

    return VARIABLE.sub(replaced, rule)


__all__ = ["VARIABLE", "has_variables", "substitute", "variables"]
