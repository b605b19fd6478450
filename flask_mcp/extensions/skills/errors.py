"""What is wrong with a skill folder: each problem names the file and the fix."""

from __future__ import annotations

import dataclasses
import typing as t


@dataclasses.dataclass(frozen=True)
class Problem:
    """One thing wrong with a skill, or worth a note.

    :param path: the file or folder concerned, as found on disk.
    :param message: what is wrong and how to fix it.
    :param error: ``False`` for a note: the skill is served anyway (an unknown
        frontmatter field, a name two skills share).
    """

    path: str
    message: str
    error: bool = True

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class SkillError(ValueError):
    """A skill cannot be served; :attr:`problems` says where and how to fix each reason.

    Raised when a skill folder or skill is added, so a broken skill fails at
    startup (or in ``flask mcp skills``) rather than on a client's request.
    """

    def __init__(self, problems: t.Sequence[Problem]) -> None:
        self.problems = tuple(problem for problem in problems if problem.error)
        lines = [str(problem) for problem in self.problems]
        if len(lines) == 1:
            text = f"Cannot serve the skill: {lines[0]}"
        else:
            text = f"Cannot serve the skills ({len(lines)} problems):\n" + "\n".join(
                f"- {line}" for line in lines
            )
        super().__init__(text)


__all__ = ["Problem", "SkillError"]
