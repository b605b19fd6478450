"""Print the import graph of ``flask_mcp``: cycles, and imports that point up the layers.

Usage::

    python scripts/import_graph.py            # summary: counts, cycles, upward imports
    python scripts/import_graph.py --edges    # also every edge, with its kind
    python scripts/import_graph.py --check    # exit 1 on a cycle or an upward import

Every ``import`` statement of the package is read with :mod:`ast` (nothing is imported)
and sorted into three kinds:

- ``module``: at the top level of the module (runs when the module is imported);
- ``function``: inside a function or method (runs when it is called);
- ``type``: under ``if TYPE_CHECKING:`` (never runs; still a dependency of the design).

Cycles are the strongly connected components of the graph of modules, counted three
ways: all kinds, run-time kinds (module + function) and module-level only. An upward
import is one from a module of a lower layer to a module of a higher one, by the table
:data:`LAYERS` (the layers of ``docs/architecture.md``). It also lists the modules that
read Flask's request or ``current_app`` outside the transport and the face.
"""

from __future__ import annotations

import argparse
import ast
import collections
import pathlib
import sys
import typing as t

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = "flask_mcp"

#: Layers, lowest first. A module's layer is looked up by its dotted name below the package,
#: longest prefix first; the flat names of the layout before issue 12 are listed too, so the
#: script measures both layouts. A module that only re-exports names (a compatibility
#: module) belongs to the face, whatever its name.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("leaves", ("errors", "signals", "content", "convert")),
    (
        "L1 protocol/schema/backends",
        (
            "protocol",
            "jsonrpc",
            "headers",
            "backends",
            "schema",
            "schema_fast",
            "schema_types",
            "schema_output",
            "schema_marshmallow",
            "schema_pydantic",
        ),
    ),
    ("L2 config", ("config", "_config_values")),
    ("L3 auth", ("auth", "auth_metadata", "jwt_auth")),
    ("L4 runtime", ("runtime", "session", "supervisor", "_concurrency", "state", "notify")),
    (
        "L5 server",
        (
            "server",
            "call",
            "dispatcher",
            "registry",
            "declarations",
            "context",
            "mrtr",
            "sealing",
            "uritemplate",
            "resource_security",
            "environment",
        ),
    ),
    ("L5b extensions", ("extensions",)),
    (
        "L6 transport",
        (
            "transport",
            "runner",
            "stateless",
            "sse",
            "listen",
            "security",
            "responses",
            "auth_context",
        ),
    ),
    (
        "L6c explorer",
        ("explorer",),
    ),
    (
        "L6b integrations under the face",
        ("contrib.views", "contrib.view_answers", "contrib.webargs_schemas", "contrib.celery"),
    ),
    ("L7 face", ("", "extension", "testing", "_testing", "pytest_plugin", "cli", "client")),
    ("L8 contrib", ("contrib",)),
)
#: Flask names only the transport, the face and the integrations above it may import.
REQUEST_NAMES = frozenset({"request", "current_app", "copy_current_request_context"})
FACE_OR_TRANSPORT = (
    "L6 transport",
    "L6c explorer",
    "L6b integrations under the face",
    "L7 face",
    "L8 contrib",
)


class Edge(t.NamedTuple):
    importer: str
    imported: str
    kind: str  # "module", "function" or "type"
    line: int


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_package(name: str, modules: t.Mapping[str, pathlib.Path]) -> bool:
    return modules[name].name == "__init__.py"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, kind: str) -> t.Iterator[tuple[ast.AST, str]]:
    """Yield every import node below ``node`` with the kind of the place it sits in."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, kind
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _walk(child, "type" if kind == "type" else "function")
        elif isinstance(child, ast.If) and _is_type_checking(child.test):
            for stmt in child.body:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), "type")
            for stmt in child.orelse:
                yield from _walk(ast.Module(body=[stmt], type_ignores=[]), kind)
        else:
            yield from _walk(child, kind)


def _resolve(importer: str, package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    if not package:
        base.pop()
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def scan(
    modules: t.Mapping[str, pathlib.Path],
) -> tuple[list[Edge], dict[str, list[tuple[str, int]]]]:
    """Return the package-internal edges, and the Flask request names each module imports."""
    edges: list[Edge] = []
    flask_names: dict[str, list[tuple[str, int]]] = collections.defaultdict(list)
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        package = is_package(name, modules)
        for node, kind in _walk(tree, "module"):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                assert isinstance(node, ast.ImportFrom)
                base = _resolve(name, package, node)
                if base == "flask" or base.startswith("flask."):
                    for alias in node.names:
                        if alias.name in REQUEST_NAMES and kind != "type":
                            flask_names[name].append((alias.name, node.lineno))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                while target and target not in modules:  # a name inside a module
                    target = target.rpartition(".")[0]
                if target.startswith(PACKAGE) and target != name and target in modules:
                    edges.append(Edge(name, target, kind, node.lineno))
    return edges, flask_names


def is_reexport(path: pathlib.Path) -> bool:
    """Tell whether a module only re-exports names (docstring, imports, ``__all__``)."""
    tree = ast.parse(path.read_text())
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if all(isinstance(x, ast.Name) and x.id == "__all__" for x in targets):
                continue
        return False
    return bool(tree.body) and path.name != "__init__.py"


def layer_of(name: str, modules: t.Mapping[str, pathlib.Path]) -> tuple[int, str]:
    if is_reexport(modules[name]):
        return len(LAYERS) - 1, LAYERS[-1][0]
    rest = name[len(PACKAGE) + 1 :] if name != PACKAGE else ""
    best: tuple[int, int, str] | None = None
    for index, (label, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = rest == prefix or (prefix and rest.startswith(prefix + "."))
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index, label)
    if best is None:
        raise SystemExit(f"{name} is in no layer: add it to LAYERS in {__file__}.")
    return best[1], best[2]


def cycles(nodes: t.Iterable[str], edges: t.Iterable[Edge]) -> list[list[str]]:
    """Return the strongly connected components with more than one module (Tarjan)."""
    graph: dict[str, set[str]] = collections.defaultdict(set)
    for edge in edges:
        graph[edge.importer].add(edge.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", action="store_true", help="print every edge")
    parser.add_argument("--check", action="store_true", help="fail on a cycle or upward import")
    args = parser.parse_args(argv)

    modules = {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}
    edges, flask_names = scan(modules)
    kinds = collections.Counter(edge.kind for edge in edges)
    print(f"{len(modules)} modules, {len(edges)} internal imports: {dict(sorted(kinds.items()))}")
    if args.edges:
        for edge in sorted(edges):
            print(f"  {edge.importer} -> {edge.imported} ({edge.kind}, line {edge.line})")

    failed = False
    for label, selected in (
        ("all kinds (TYPE_CHECKING included)", edges),
        ("run time (module + function)", [e for e in edges if e.kind != "type"]),
        ("module level only", [e for e in edges if e.kind == "module"]),
    ):
        found = cycles(modules, selected)
        print(f"cycles, {label}: {len(found)}")
        for component in found:
            print(f"  {len(component)} modules: {', '.join(component)}")
        failed = failed or bool(found)

    upward = []
    for edge in edges:
        low, low_label = layer_of(edge.importer, modules)
        high, high_label = layer_of(edge.imported, modules)
        if high > low:
            upward.append((edge, low_label, high_label))
    print(f"upward imports: {len(upward)}")
    for edge, low_label, high_label in sorted(upward):
        print(
            f"  {edge.importer} ({low_label}) -> {edge.imported} ({high_label}), "
            f"{edge.kind}, line {edge.line}"
        )
    failed = failed or bool(upward)

    readers = {
        name: found
        for name, found in sorted(flask_names.items())
        if layer_of(name, modules)[1] not in FACE_OR_TRANSPORT
    }
    print(f"modules below the transport importing flask.request/current_app: {len(readers)}")
    for name, found in readers.items():
        print(f"  {name}: {', '.join(f'{n} (line {line})' for n, line in found)}")
    failed = failed or bool(readers)

    sizes = sorted(((len(p.read_text().splitlines()), n) for n, p in modules.items()), reverse=True)
    print("largest modules: " + ", ".join(f"{n} {lines}" for lines, n in sizes[:5]))
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
