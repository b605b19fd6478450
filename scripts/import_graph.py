"""Check the import graph of ``flask_mcp`` against the layer contract, and write its docs table.

Usage::

    python scripts/import_graph.py               # summary: counts, cycles, layer breaches
    python scripts/import_graph.py --edges       # also every edge, with its kind
    python scripts/import_graph.py --check       # exit 1 on a breach or a stale docs table
    python scripts/import_graph.py --write-docs  # regenerate the table of docs/architecture.md

The layers are read from the import-linter contract in ``setup.cfg``
(``[importlinter:contract:layers]``), the one layer table of the project: lines are
layers, highest first; modules joined by ``|`` are independent siblings (neither imports
the other), modules joined by ``:`` share a layer; ``(name)`` is an optional layer. A new
package needs only a line there.

Every ``import`` statement of the package is read with :mod:`ast` (nothing is imported)
and sorted into three kinds:

- ``module``: at the top level of the module (runs when the module is imported);
- ``function``: inside a function or method (runs when it is called);
- ``type``: under ``if TYPE_CHECKING:`` (never runs; still a dependency of the design).

Cycles are the strongly connected components of the graph of modules, counted three
ways: all kinds, run-time kinds (module + function) and module-level only. A breach is
an import from a lower layer to a higher one, or between independent siblings, all kinds
counted (as ``lint-imports`` counts them). It also lists the modules below the transport
that read Flask's request or ``current_app``, which only the transport and the layers
above it may.

The layer table of ``docs/architecture.md`` (between its ``layers`` markers) is made from
the contract and from each module's docstring summary; ``--check`` fails when it differs
from what ``--write-docs`` would write.
"""

from __future__ import annotations

import argparse
import ast
import collections
import configparser
import dataclasses
import pathlib
import re
import sys
import typing as t

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = "flask_mcp"
SETUP_CFG = ROOT / "setup.cfg"
CONTRACT = "importlinter:contract:layers"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
BEGIN = (
    "<!-- begin layers: generated from setup.cfg by "
    "`python scripts/import_graph.py --write-docs`; do not edit by hand -->"
)
END = "<!-- end layers -->"
#: The module whose layer is the transport: the layers below it may not read the request.
TRANSPORT = "transport"
#: Flask names only the transport and the layers above it may import.
REQUEST_NAMES = frozenset({"request", "current_app", "copy_current_request_context"})


@dataclasses.dataclass(frozen=True)
class Layer:
    """One line of the contract: its position (0 is the lowest) and its modules.

    ``groups`` are the independent parts of the line (split on ``|``); the modules of one
    group (joined by ``:``) may import each other.
    """

    index: int
    groups: tuple[tuple[str, ...], ...]
    optional: frozenset[str]

    @property
    def modules(self) -> tuple[str, ...]:
        return tuple(name for group in self.groups for name in group)

    @property
    def label(self) -> str:
        return f"L{self.index} ({', '.join(self.modules)})"


@dataclasses.dataclass(frozen=True)
class Contract:
    """The layers of the import-linter contract, lowest first, and the modules it ignores."""

    layers: tuple[Layer, ...]
    ignored: tuple[str, ...]

    def place(self, rest: str) -> tuple[int, int] | None:
        """Return ``(layer index, group index)`` of a module named below the package.

        ``None`` for the package itself and the modules the contract ignores, which are
        in no layer: imports from and to them are not checked (as by lint-imports).

        :raises SystemExit: the module is in no layer.
        """
        best: tuple[int, int, int] | None = None
        for layer in self.layers:
            for group_index, group in enumerate(layer.groups):
                for prefix in group:
                    inside = rest == prefix or rest.startswith(prefix + ".")
                    if inside and (best is None or len(prefix) > best[0]):
                        best = (len(prefix), layer.index, group_index)
        if best is not None:
            return best[1], best[2]
        if rest == "" or rest in self.ignored:
            return None
        raise SystemExit(
            f"{PACKAGE}.{rest} is in no layer: add it to the layers of [{CONTRACT}] in "
            f"{SETUP_CFG.name}, where lint-imports reads them too."
        )


def read_contract(path: pathlib.Path = SETUP_CFG) -> Contract:
    """Read the layers contract of ``setup.cfg``."""
    parser = configparser.ConfigParser(interpolation=None, comment_prefixes=("#", ";"))
    parser.read(path)
    section = parser[CONTRACT]
    containers = section.get("containers", "").split()
    if containers != [PACKAGE]:
        raise SystemExit(f"[{CONTRACT}] must have the one container {PACKAGE}: {containers}")
    lines = [line.strip() for line in section["layers"].splitlines() if line.strip()]
    layers = []
    for index, line in enumerate(reversed(lines)):
        groups: list[tuple[str, ...]] = []
        optional: set[str] = set()
        for part in line.split("|"):
            names = []
            for raw in part.split(":"):
                name = raw.strip()
                if name.startswith("(") and name.endswith(")"):
                    name = name[1:-1].strip()
                    optional.add(name)
                names.append(name)
            groups.append(tuple(names))
        layers.append(Layer(index, tuple(groups), frozenset(optional)))
    return Contract(tuple(layers), tuple(section.get("exhaustive_ignores", "").split()))


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


def summary_of(path: pathlib.Path) -> str:
    """Return the first line of a module's docstring, with reST roles as Markdown code."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    line = doc.strip().splitlines()[0] if doc.strip() else "(no docstring)"
    line = re.sub(r":[a-z]+:`~?([^`<]*?)\s*<[^`>]*>`", r"`\1`", line)  # :role:`text <target>`
    line = re.sub(r":[a-z]+:`~([^`]*)`", lambda m: f"`{m[1].rsplit('.', 1)[-1]}`", line)
    line = re.sub(r":[a-z]+:`([^`]*)`", r"`\1`", line)
    return line.replace("``", "`").replace("|", "\\|")


def docs_table(contract: Contract, modules: t.Mapping[str, pathlib.Path]) -> str:
    """Return the generated layer table of ``docs/architecture.md``, markers included."""
    rows = ["| layer | module | holds |", "|---|---|---|"]
    independent: list[str] = []
    for layer in contract.layers:
        if len(layer.groups) > 1:
            parts = ["+".join(f"`{name}`" for name in group) for group in layer.groups]
            independent.append(", ".join(parts[:-1]) + " and " + parts[-1])
        for name in layer.modules:
            full = f"{PACKAGE}.{name}"
            if full not in modules:
                if name in layer.optional:
                    continue
                raise SystemExit(f"{full}, a layer of [{CONTRACT}], is not in the package.")
            path = modules[full]
            children = sorted(
                other.rsplit(".", 1)[1] for other in modules if other.rsplit(".", 1)[0] == full
            )
            cell = f"`{name.replace('.', '/')}/`" if path.name == "__init__.py" else f"`{name}`"
            if children:
                cell += " (" + ", ".join(f"`{child}`" for child in children) + ")"
            rows.append(f"| L{layer.index} | {cell} | {summary_of(path)} |")
    notes = [
        "",
        f"L0 is the lowest layer, L{len(contract.layers) - 1} the highest; a module imports "
        "only its own layer or a lower one. Independent siblings never import each other: "
        + ("; ".join(independent) if independent else "none")
        + ". Ignored by the contract (above every layer): "
        + (", ".join(f"`{name}`" for name in contract.ignored) or "none")
        + ", and the package's `__init__`.",
    ]
    return "\n".join([BEGIN, "", *rows, *notes, "", END])


def stale_docs(table: str) -> str | None:
    """Return why ``docs/architecture.md`` does not hold ``table``, or ``None``."""
    text = ARCHITECTURE.read_text()
    if BEGIN not in text or END not in text:
        return f"{ARCHITECTURE.name} has no generated layer table (the {BEGIN!r} markers)"
    current = text[text.index(BEGIN) : text.index(END) + len(END)]
    if current != table:
        return f"the layer table of {ARCHITECTURE.name} is not the contract's"
    return None


def write_docs(table: str) -> None:
    text = ARCHITECTURE.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"Put the markers {BEGIN!r} and {END!r} in {ARCHITECTURE} first.")
    start, end = text.index(BEGIN), text.index(END) + len(END)
    ARCHITECTURE.write_text(text[:start] + table + text[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", action="store_true", help="print every edge")
    parser.add_argument(
        "--check", action="store_true", help="fail on a cycle, a breach or a stale docs table"
    )
    parser.add_argument(
        "--write-docs", action="store_true", help="regenerate the docs' layer table"
    )
    args = parser.parse_args(argv)

    contract = read_contract()
    modules = {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}
    table = docs_table(contract, modules)
    if args.write_docs:
        write_docs(table)
        print(f"wrote the layer table of {ARCHITECTURE.relative_to(ROOT)}")
    edges, flask_names = scan(modules)
    kinds = collections.Counter(edge.kind for edge in edges)
    print(
        f"{len(modules)} modules in {len(contract.layers)} layers, {len(edges)} internal "
        f"imports: {dict(sorted(kinds.items()))}"
    )
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

    def place(name: str) -> tuple[int, int] | None:
        return contract.place(name[len(PACKAGE) + 1 :] if name != PACKAGE else "")

    def label(name: str) -> str:
        found = place(name)
        return contract.layers[found[0]].label if found is not None else "in no layer"

    upward, sideways = [], []
    for edge in edges:
        importer, imported = place(edge.importer), place(edge.imported)
        if importer is None or imported is None:
            continue
        if imported[0] > importer[0]:
            upward.append(edge)
        elif imported[0] == importer[0] and imported[1] != importer[1]:
            sideways.append(edge)
    for title, found_edges in (
        ("upward imports", upward),
        ("imports between independent siblings", sideways),
    ):
        print(f"{title}: {len(found_edges)}")
        for edge in sorted(found_edges):
            print(
                f"  {edge.importer} ({label(edge.importer)}) -> {edge.imported} "
                f"({label(edge.imported)}), {edge.kind}, line {edge.line}"
            )
        failed = failed or bool(found_edges)

    transport = contract.place(TRANSPORT)
    assert transport is not None, f"{TRANSPORT} must be in a layer"
    readers = {
        name: found
        for name, found in sorted(flask_names.items())
        if (where := place(name)) is not None and where[0] < transport[0]
    }
    print(f"modules below the transport importing flask.request/current_app: {len(readers)}")
    for name, found in readers.items():
        print(f"  {name}: {', '.join(f'{n} (line {line})' for n, line in found)}")
    failed = failed or bool(readers)

    stale = stale_docs(table)
    print(f"docs/architecture.md layer table: {'stale, ' + stale if stale else 'current'}")
    if stale:
        print("  regenerate it: python scripts/import_graph.py --write-docs")
        failed = True
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
