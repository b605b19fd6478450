"""No module reaches into another subpackage's private names (issue 27).

A leading underscore says "this may change without notice"; only the subpackage that
defines a private name may use it. Checked over the source with ``ast``:

- ``from ..x import _name``, ``from ..x._module import name`` and ``module._name`` of a
  module imported from another subpackage (a top-level module counts as its own
  subpackage);
- the stdio transport uses nothing private of the HTTP modules (it shares the intake
  of :mod:`flask_mcp.kernel.intake` and the public methods of ``Handshake``).
"""

from __future__ import annotations

import ast
import importlib.util
import pathlib

import flask_mcp

PACKAGE = pathlib.Path(flask_mcp.__file__).parent
#: Known crossings, each waiting for the engineer who owns the module (issue 27, item 4):
#: remove a line when its module is merged into a public one; never add one.
PENDING: set[tuple[str, str]] = set()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _subpackage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _modules() -> list[tuple[str, str, ast.Module]]:
    """(module, its package, its tree) for every module of flask_mcp."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = ["flask_mcp", *path.relative_to(PACKAGE).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        module = ".".join(parts)
        package = module if is_package else module.rsplit(".", 1)[0]
        found.append((module, package, ast.parse(path.read_text(), str(path))))
    return found


def _target(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")
    if node.level > 1:
        base = base[: -(node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def crossings() -> dict[tuple[str, str], list[str]]:
    """Private names of other subpackages each module uses, by (module, private module)."""
    found: dict[tuple[str, str], list[str]] = {}
    for module, package, tree in _modules():
        bound: dict[str, str] = {}  # local name -> a flask_mcp module
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _target(node, package)
            if not target.startswith("flask_mcp"):
                continue
            for alias in node.names:
                full = f"{target}.{alias.name}"
                if _is_module(full):
                    bound[alias.asname or alias.name] = full
                if _subpackage(full) == _subpackage(module):
                    continue
                parts = full.split(".")[1:]
                if any(_private(part) for part in parts):
                    private_at = next(i for i, p in enumerate(parts) if _private(p))
                    owner = ".".join(["flask_mcp", *parts[: private_at + 1]])
                    found.setdefault((module, owner), []).append(full)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and _private(node.attr)
                and _subpackage(bound[node.value.id]) != _subpackage(module)
            ):
                target = bound[node.value.id]
                found.setdefault((module, target), []).append(f"{target}.{node.attr}")
    return found


def test_no_module_uses_a_private_name_of_another_subpackage() -> None:
    found = crossings()
    new = {key: names for key, names in found.items() if key not in PENDING}
    assert new == {}, "use a public name, or make the name public in its module"
    stale = PENDING - set(found)
    assert stale == set(), "these crossings are gone: remove them from PENDING"


def test_stdio_uses_nothing_private_of_the_http_modules() -> None:
    for module, package, tree in _modules():
        if module not in ("flask_mcp.transport.stdio", "flask_mcp.transport.stdio_channel"):
            continue
        private = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and _target(node, package).startswith("flask_mcp"):
                private += [alias.name for alias in node.names if _private(alias.name)]
                target = _target(node, package)
                if any(_private(part) for part in target.split(".")):
                    private.append(target)
            if (
                isinstance(node, ast.Attribute)
                and _private(node.attr)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr in ("handshake", "dispatcher")
            ):
                private.append(f"{node.value.attr}.{node.attr}")
        assert private == [], f"{module} uses private names: {private}"
