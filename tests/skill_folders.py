"""Skill folders for the tests of the Skills extension: write them, edit them, the examples."""

from __future__ import annotations

import os
import pathlib

#: The worked folder of docs/skills.md.
EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples" / "skills"


def skill_md(
    name: str, description: str = "Does a thing. Use it when asked.", extra: str = ""
) -> str:
    """A valid SKILL.md for the skill ``name``; ``extra`` adds frontmatter lines."""
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n\nSteps.\n"


def write(root: pathlib.Path, files: dict[str, str | bytes]) -> pathlib.Path:
    """Write ``files`` (paths below ``root`` to text or bytes) and return ``root``."""
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return root


def touch(path: pathlib.Path, content: str) -> None:
    """Write ``content`` so that the change shows in the file's modification time."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(content)
    if path.stat().st_mtime_ns == before:  # a coarse clock: make the change visible
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))
