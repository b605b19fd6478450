"""The YAML frontmatter of a ``SKILL.md`` and the Agent Skills rules it must follow.

The MCP Skills extension delegates the skill format to the Agent Skills
specification (https://agentskills.io/specification): ``name`` (1-64 lowercase
letters, digits and single hyphens, equal to the skill's directory name) and
``description`` (1-1024 characters) are required; ``license``,
``compatibility`` (at most 500 characters), ``metadata`` (string keys to string
values) and ``allowed-tools`` are optional. The frontmatter is published
verbatim as JSON in ``skills/list`` entries, so it must also be JSON: string
keys, no dates, bytes or sets.

YAML is read with PyYAML's safe loader (``pip install 'Flask-MCP[skills]'``),
with two changes. Plain scalars are typed as YAML 1.2 types them (its core
schema), not as PyYAML's YAML 1.1: a host checks the entry's frontmatter field
by field against its own reading of ``SKILL.md``, and hosts read YAML 1.2 (the
JavaScript ``yaml`` package, ``js-yaml`` 4). So ``yes``, ``on``, ``1:30``,
``0b11``, ``1_000``, ``=`` and ``<<`` stay strings, ``017`` is 17 and ``0o17``
is 15, and a date stays the string the author wrote (``2025-01-31`` is not
turned into a date the entry could not publish verbatim). And a key written
twice is an error instead of the last one silently winning.
"""

from __future__ import annotations

import importlib
import math
import re
import typing as t

from ...server.blueprints import MAX_SKILL_DESCRIPTION_LENGTH
from .errors import Problem

#: The Agent Skills limits.
MAX_NAME_LENGTH = 64
MAX_DESCRIPTION_LENGTH = MAX_SKILL_DESCRIPTION_LENGTH  # one limit: bp.dynamic_skill checks it
MAX_COMPATIBILITY_LENGTH = 500
#: The fields the Agent Skills specification defines.
KNOWN_FIELDS = frozenset(
    {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
)
#: ``metadata`` keys with this prefix are reserved for MCP extensions.
RESERVED_METADATA_PREFIX = "io.modelcontextprotocol/"
#: A skill name: lowercase ASCII letters and digits, single hyphens inside.
NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MERGE_TAG = "tag:yaml.org,2002:merge"
#: The YAML 1.1 tags PyYAML gives plain scalars that YAML 1.2's core schema types
#: otherwise (or leaves strings): they are resolved with :data:`CORE_SCHEMA` instead.
YAML_1_1_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("bool", "int", "float", "timestamp", "value", "merge")
)
#: YAML 1.2 core schema resolvers (tag, pattern, first characters), in the order tried.
CORE_SCHEMA = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
)
_CORE_INT = re.compile(CORE_SCHEMA[1][1])
_FENCE = re.compile(r"^---[ \t]*\r?\n?$")
_yaml_loader: t.Any = None


def yaml_loader() -> t.Any:
    """Return the YAML loader class (PyYAML's safe loader, YAML 1.2 scalars, no duplicate keys).

    :raises ImportError: PyYAML is not installed; the message names the extra.
    """
    global _yaml_loader
    if _yaml_loader is not None:
        return _yaml_loader
    try:
        yaml = importlib.import_module("yaml")
    except ImportError:
        raise ImportError(
            "Serving skills needs PyYAML to read SKILL.md frontmatter, which is not "
            "installed: pip install 'Flask-MCP[skills]'."
        ) from None
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class FrontmatterLoader(base):  # type: ignore[misc,valid-type]
        """The safe loader typing scalars as YAML 1.2 does, refusing a key written twice."""

        def construct_mapping(self, node: t.Any, deep: bool = False) -> t.Any:
            seen: set[t.Any] = set()
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag != MERGE_TAG:
                    key = (key_node.tag, key_node.value)
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            None,
                            None,
                            f"the key {key_node.value!r} is written twice; keep one",
                            key_node.start_mark,
                        )
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node: t.Any) -> int:
            """Read an integer as YAML 1.2 writes it: decimal, ``0o`` octal, ``0x`` hex."""
            value = self.construct_scalar(node)
            if not _CORE_INT.match(value):
                raise yaml.constructor.ConstructorError(
                    None, None, f"{value!r} is not an integer", node.start_mark
                )
            if value.startswith(("0o", "0x")):
                return int(value[2:], 8 if value[1] == "o" else 16)
            return int(value, 10)

    FrontmatterLoader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in YAML_1_1_TAGS]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    for tag, pattern, first in CORE_SCHEMA:
        FrontmatterLoader.add_implicit_resolver(tag, re.compile(pattern), list(first))
    FrontmatterLoader.add_constructor("tag:yaml.org,2002:int", FrontmatterLoader.construct_yaml_int)
    _yaml_loader = FrontmatterLoader
    return FrontmatterLoader


def split(text: str) -> tuple[str, str] | None:
    """Return the frontmatter's YAML and the body of a ``SKILL.md``, or ``None`` without one.

    The file must begin with a ``---`` line (a byte-order mark before it is
    tolerated) and the frontmatter ends at the next ``---`` line.
    """
    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or not _FENCE.match(lines[0]):
        return None
    for index in range(1, len(lines)):
        if _FENCE.match(lines[index]):
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    return None


def parse(data: bytes, where: str) -> tuple[dict[str, t.Any] | None, list[Problem]]:
    """Parse the frontmatter of a ``SKILL.md`` from its bytes.

    :param where: the file, for the problems.
    :return: the frontmatter (``None`` when it cannot be read) and the problems found.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [Problem(where, f"is not UTF-8 text ({exc.reason}): save it as UTF-8")]
    parts = split(text)
    if parts is None:
        return None, [
            Problem(
                where,
                "does not begin with YAML frontmatter: start the file with a '---' line, "
                "then 'name: <skill-name>' and 'description: <what it does and when to use "
                "it>', then a closing '---' line",
            )
        ]
    loader = yaml_loader()
    yaml = importlib.import_module("yaml")
    try:
        value = yaml.load(parts[0], Loader=loader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        return None, [Problem(where, f"the frontmatter is not valid YAML: {detail}")]
    if not isinstance(value, dict):
        return None, [
            Problem(
                where,
                "the frontmatter must be a YAML mapping of fields ('name: ...', "
                f"'description: ...'), not {_kind(value)}",
            )
        ]
    problems = [Problem(where, message) for message in _not_json(value, "frontmatter")]
    return (None if problems else value), problems


def _kind(value: t.Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"


def _not_json(value: t.Any, where: str) -> t.Iterator[str]:
    """Yield why ``value`` has no faithful JSON form (skills/list publishes it verbatim)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                yield (
                    f"the key {key!r} in {where} is not a string: quote it "
                    f"('\"{key}\": ...') so that the entry can publish it as JSON"
                )
                continue
            yield from _not_json(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _not_json(item, f"{where}[{index}]")
    elif isinstance(value, float) and not math.isfinite(value):
        yield f"{where} is {value}, which JSON cannot hold: quote it"
    elif value is not None and not isinstance(value, (str, bool, int, float)):
        yield (
            f"{where} is a YAML {type(value).__name__}, which JSON cannot hold: write it as a "
            "string, a number, a list or a mapping"
        )


def name_problems(name: t.Any) -> list[str]:
    """Return why ``name`` breaks the Agent Skills naming rules (empty when it is valid)."""
    if not isinstance(name, str) or not name:
        return ["'name' must be a non-empty string"]
    found = []
    if len(name) > MAX_NAME_LENGTH:
        found.append(f"'name' is {len(name)} characters long; the limit is {MAX_NAME_LENGTH}")
    if not NAME.match(name):
        if name != name.lower():
            found.append(f"'name' {name!r} must be lowercase")
        if re.search(r"[^A-Za-z0-9-]", name):
            found.append(f"'name' {name!r} may hold only lowercase letters a-z, digits and hyphens")
        if name.startswith("-") or name.endswith("-"):
            found.append(f"'name' {name!r} must not begin or end with a hyphen")
        if "--" in name:
            found.append(f"'name' {name!r} must not hold two hyphens in a row")
    return found


def check(frontmatter: dict[str, t.Any], directory: str, where: str) -> list[Problem]:
    """Check a parsed frontmatter against the Agent Skills rules.

    :param directory: the name of the skill's directory, which ``name`` must equal.
    :param where: the ``SKILL.md`` file, for the problems.
    """
    problems: list[Problem] = []

    def error(message: str) -> None:
        problems.append(Problem(where, message))

    def note(message: str) -> None:
        problems.append(Problem(where, message, error=False))

    name = frontmatter.get("name")
    if "name" not in frontmatter:
        error(f"the frontmatter has no 'name': add 'name: {directory}' (the directory's name)")
    else:
        for message in name_problems(name):
            error(
                f"{message}: the skill name is lowercase words joined by hyphens, such as "
                "'pdf-processing', and the directory has the same name"
            )
        if isinstance(name, str) and name != directory:
            error(
                f"'name' is {name!r} but the directory is named {directory!r}: they must be "
                f"equal (the skill's URI ends with its name); rename the directory to {name!r} "
                f"or set 'name: {directory}'"
            )
    description = frontmatter.get("description")
    if "description" not in frontmatter:
        error(
            "the frontmatter has no 'description': add 'description: <what the skill does and "
            "when to use it>'"
        )
    elif not isinstance(description, str) or not description.strip():
        error("'description' must be a non-empty string saying what the skill does")
    elif len(description) > MAX_DESCRIPTION_LENGTH:
        error(
            f"'description' is {len(description)} characters long; the limit is "
            f"{MAX_DESCRIPTION_LENGTH}: move the details into the body of SKILL.md"
        )
    compatibility = frontmatter.get("compatibility")
    if "compatibility" in frontmatter and (
        not isinstance(compatibility, str)
        or not compatibility
        or len(compatibility) > MAX_COMPATIBILITY_LENGTH
    ):
        error(
            f"'compatibility' must be a string of 1 to {MAX_COMPATIBILITY_LENGTH} characters "
            "describing what the skill needs (a product, system packages, network access)"
        )
    if "license" in frontmatter and not isinstance(frontmatter["license"], str):
        error("'license' must be a string: a license name, or the file of the license")
    tools = frontmatter.get("allowed-tools")
    if "allowed-tools" in frontmatter and not (
        isinstance(tools, str)
        or (isinstance(tools, list) and all(isinstance(item, str) for item in tools))
    ):
        error("'allowed-tools' must be a space-separated string of tool names")
    metadata = frontmatter.get("metadata")
    if "metadata" in frontmatter:
        if not isinstance(metadata, dict):
            error("'metadata' must be a mapping of string keys to string values")
        else:
            odd = [key for key, value in metadata.items() if not isinstance(value, str)]
            if odd:
                note(
                    f"'metadata' values should be strings (Agent Skills); quote "
                    f"{', '.join(repr(key) for key in odd)}"
                )
            reserved = [key for key in metadata if key.startswith(RESERVED_METADATA_PREFIX)]
            if reserved:
                note(
                    f"'metadata' keys beginning with {RESERVED_METADATA_PREFIX!r} are reserved "
                    f"for MCP extensions: rename {', '.join(repr(key) for key in reserved)}"
                )
    unknown = sorted(set(frontmatter) - KNOWN_FIELDS)
    if unknown:
        several = len(unknown) > 1
        note(
            f"{'fields' if several else 'field'} {', '.join(repr(k) for k in unknown)} "
            f"{'are' if several else 'is'} not in the Agent Skills specification; published as "
            "written (put data of your own under 'metadata')"
        )
    return problems


__all__ = [
    "CORE_SCHEMA",
    "KNOWN_FIELDS",
    "MAX_COMPATIBILITY_LENGTH",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_NAME_LENGTH",
    "NAME",
    "RESERVED_METADATA_PREFIX",
    "YAML_1_1_TAGS",
    "check",
    "name_problems",
    "parse",
    "split",
    "yaml_loader",
]
