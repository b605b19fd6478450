"""SKILL.md frontmatter: read with PyYAML's safe loader, checked against the Agent Skills rules."""

from __future__ import annotations

import pytest

from flask_mcp.extensions.skills import frontmatter


def parse(text: str) -> tuple[dict | None, list[str]]:
    found, problems = frontmatter.parse(text.encode(), "x/SKILL.md")
    return found, [str(problem) for problem in problems]


def errors(found: dict, directory: str = "demo") -> list[str]:
    return [str(p) for p in frontmatter.check(found, directory, "x/SKILL.md") if p.error]


def notes(found: dict, directory: str = "demo") -> list[str]:
    return [str(p) for p in frontmatter.check(found, directory, "x/SKILL.md") if not p.error]


def test_parses_the_frontmatter_verbatim() -> None:
    found, problems = parse(
        "---\nname: demo\ndescription: Does it.\nlicense: MIT\n"
        "metadata:\n  team: ops\n---\n# Body\n"
    )
    assert problems == []
    assert found == {
        "name": "demo",
        "description": "Does it.",
        "license": "MIT",
        "metadata": {"team": "ops"},
    }


def test_crlf_line_endings_and_a_byte_order_mark() -> None:
    found, problems = parse("\ufeff---\r\nname: demo\r\ndescription: d\r\n---\r\nbody\r\n")
    assert problems == [] and found == {"name": "demo", "description": "d"}


def test_a_date_stays_the_text_the_author_wrote() -> None:
    found, _ = parse("---\nname: demo\ndescription: d\nupdated: 2025-01-31\n---\n")
    assert found is not None and found["updated"] == "2025-01-31"


def test_scalars_are_read_as_yaml_1_2_reads_them() -> None:
    # A host checks the entry's frontmatter against its own reading of SKILL.md, field by
    # field, and hosts read YAML 1.2 (the JavaScript yaml package, js-yaml 4): PyYAML's
    # YAML 1.1 readings (yes as true, 1:30 as 90, 017 as 15) would fail that check.
    found, problems = parse(
        "---\nname: demo\ndescription: d\n"
        "metadata:\n  reviewed: yes\n  window: 1:30\n  off: on\n  build: 017\n"
        "  mask: 0o17\n  flags: 0b11\n  big: 1_000\n  hex: 0x1F\n  ratio: 1e3\n"
        "  real: -2.5\n  sure: True\n  none: ~\n  eq: =\n  merged: {<<: {a: 1}, b: 2}\n---\n"
    )
    assert problems == []
    assert found is not None and found["metadata"] == {
        "reviewed": "yes",
        "window": "1:30",
        "off": "on",
        "build": 17,
        "mask": 15,
        "flags": "0b11",
        "big": "1_000",
        "hex": 31,
        "ratio": 1000.0,
        "real": -2.5,
        "sure": True,
        "none": None,
        "eq": "=",
        "merged": {"<<": {"a": 1}, "b": 2},
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# no frontmatter\n", "does not begin with YAML frontmatter: start the file with"),
        ("---\nname: demo\n", "does not begin with YAML frontmatter"),
        ("---\nname: [demo\n---\n", "the frontmatter is not valid YAML"),
        ("---\n- a\n- b\n---\n", "must be a YAML mapping of fields"),
        ("---\n---\n", "must be a YAML mapping of fields ('name: ...', 'description: ...'), not"),
        ("---\nname: a\nname: b\n---\n", "the key 'name' is written twice; keep one"),
        ("---\nname: a\n1: b\n---\n", "the key 1 in frontmatter is not a string: quote it"),
        ("---\nname: a\nx: !!binary aGk=\n---\n", "frontmatter.x is a YAML bytes"),
        ("---\nname: a\nx: !!set {a}\n---\n", "frontmatter.x is a YAML set"),
        ("---\nname: a\nx: .nan\n---\n", "frontmatter.x is nan, which JSON cannot hold"),
    ],
)
def test_unreadable_frontmatter_names_the_file_and_the_fix(text: str, expected: str) -> None:
    found, problems = parse(text)
    assert found is None
    assert len(problems) == 1 and problems[0].startswith("x/SKILL.md: ")
    assert expected in problems[0]


def test_not_utf8() -> None:
    found, problems = frontmatter.parse(b"---\nname: \xff\n---\n", "x/SKILL.md")
    assert found is None and "is not UTF-8 text" in str(problems[0])


def test_a_python_tag_is_refused_by_the_safe_loader() -> None:
    found, problems = parse("---\nname: !!python/object/apply:os.system ['true']\n---\n")
    assert found is None and "not valid YAML" in problems[0]


def test_a_valid_skill_has_no_problem() -> None:
    assert frontmatter.check({"name": "demo", "description": "d"}, "demo", "f") == []


@pytest.mark.parametrize(
    ("found", "expected"),
    [
        ({"description": "d"}, "the frontmatter has no 'name': add 'name: demo'"),
        ({"name": "demo"}, "the frontmatter has no 'description': add 'description:"),
        ({"name": "demo", "description": "  "}, "'description' must be a non-empty string"),
        ({"name": "demo", "description": "d" * 1025}, "the limit is 1024: move the details"),
        ({"name": "other", "description": "d"}, "'name' is 'other' but the directory is named"),
        ({"name": "demo", "description": "d", "compatibility": ""}, "'compatibility' must be"),
        ({"name": "demo", "description": "d", "compatibility": "c" * 501}, "1 to 500"),
        ({"name": "demo", "description": "d", "license": 3}, "'license' must be a string"),
        ({"name": "demo", "description": "d", "metadata": [1]}, "'metadata' must be a mapping"),
        ({"name": "demo", "description": "d", "allowed-tools": 5}, "'allowed-tools' must be"),
    ],
)
def test_agent_skills_rules(found: dict, expected: str) -> None:
    problems = errors(found)
    assert any(expected in problem for problem in problems), problems


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Demo", "must be lowercase"),
        ("de_mo", "may hold only lowercase letters a-z, digits and hyphens"),
        ("-demo", "must not begin or end with a hyphen"),
        ("demo-", "must not begin or end with a hyphen"),
        ("de--mo", "must not hold two hyphens in a row"),
        ("d" * 65, "is 65 characters long; the limit is 64"),
        ("", "'name' must be a non-empty string"),
        ("démo", "may hold only lowercase letters a-z"),
    ],
)
def test_naming_rules(name: str, expected: str) -> None:
    problems = errors({"name": name, "description": "d"}, name)
    assert any(expected in problem for problem in problems), problems
    assert all("such as 'pdf-processing'" in p for p in problems if "'name'" in p)


def test_notes_do_not_stop_a_skill() -> None:
    found = {
        "name": "demo",
        "description": "d",
        "version": "1",
        "metadata": {"n": 1, "io.modelcontextprotocol/x": "y"},
    }
    assert errors(found) == []
    text = " ".join(notes(found))
    assert "'version' is not in the Agent Skills specification" in text
    assert "'metadata' values should be strings" in text
    assert "reserved for MCP extensions: rename 'io.modelcontextprotocol/x'" in text


def test_allowed_tools_as_a_string_or_a_list() -> None:
    assert errors({"name": "demo", "description": "d", "allowed-tools": "Bash Read"}) == []
    assert errors({"name": "demo", "description": "d", "allowed-tools": ["Bash"]}) == []
