"""Which decoded resource template values are refused before a handler runs.

The policy, its names and its defaults follow the official MCP Python SDK (2.x) and
FastMCP: NUL, ``..`` path segments and absolute paths are refused unless a template
exempts its parameter.
"""

from __future__ import annotations

import dataclasses
import string
import typing as t

if t.TYPE_CHECKING:
    from .uri_template import URITemplate


@dataclasses.dataclass(frozen=True)
class ResourceSecurity:
    """Which decoded template values are refused before a resource handler runs.

    By default a value is refused when it holds a NUL character, a ``..`` path
    segment (between ``/`` or ``\\`` separators, as in ``../etc`` or ``a/../b``) or is
    an absolute path (``/etc``, ``\\share``, ``C:`` or ``C:\\x``), however it was
    percent-encoded. The names and defaults follow the official MCP Python SDK and
    FastMCP. Exempt a parameter that legitimately holds such values:

    .. code-block:: python

        @mcp.resource("git://diff/{+range}", security=ResourceSecurity(exempt_params={"range"}))
        def diff(range: str) -> str: ...

    ``security=None`` turns the screening off for the whole template.
    """

    #: Refuse values with a ``..`` path segment.
    reject_path_traversal: bool = True
    #: Refuse values that are absolute paths (POSIX, UNC or with a Windows drive).
    reject_absolute_paths: bool = True
    #: Refuse values holding NUL (``%00``).
    reject_null_bytes: bool = True
    #: Template variables that are not screened.
    exempt_params: t.AbstractSet[str] = frozenset()

    def __post_init__(self) -> None:
        if isinstance(self.exempt_params, str):
            raise TypeError(
                f"exempt_params must be a set of names, not the string {self.exempt_params!r};"
                f" write exempt_params={{{self.exempt_params!r}}}."
            )
        object.__setattr__(self, "exempt_params", frozenset(self.exempt_params))

    def check_template(self, template: URITemplate) -> None:
        """Refuse exempt names that are not variables of ``template`` (likely a typo).

        :raises ValueError: a name in :attr:`exempt_params` is not a template variable.
        """
        unknown = sorted(set(self.exempt_params) - set(template.variables))
        if unknown:
            which = "which is not a variable" if len(unknown) == 1 else "which are not variables"
            raise ValueError(
                f"exempt_params names {', '.join(map(repr, unknown))}, {which} of the URI"
                f" template {template.template!r} (its variables: {', '.join(template.variables)})."
            )

    def validate(self, values: t.Mapping[str, t.Any]) -> tuple[str, str] | None:
        """Return ``(name, reason)`` for the first refused value, or ``None``."""
        for name, value in values.items():
            if name in self.exempt_params:
                continue
            for item in value if isinstance(value, list) else (value,):
                reason = self._reason(item)
                if reason is not None:
                    return name, reason
        return None

    def _reason(self, value: str) -> str | None:
        if self.reject_null_bytes and "\0" in value:
            return "holds a NUL character"
        if (
            self.reject_path_traversal
            and ".." in value
            and ".." in value.replace("\\", "/").split("/")
        ):
            return "holds a '..' path segment"
        if self.reject_absolute_paths and (
            value[:1] in ("/", "\\") or (value[1:2] == ":" and value[0] in string.ascii_letters)
        ):
            return "is an absolute path"
        return None


#: The screening every template gets unless it passes ``security=``.
DEFAULT_RESOURCE_SECURITY = ResourceSecurity()


__all__ = [
    "DEFAULT_RESOURCE_SECURITY",
    "ResourceSecurity",
]
