"""The Skills extension: Agent Skills served over MCP (``io.modelcontextprotocol/skills``).

A skill is a directory with a ``SKILL.md`` (YAML frontmatter, then Markdown
instructions) and the files it refers to. See :doc:`/skills`.

- :mod:`.loading` finds and checks skills on disk (:class:`SkillSource`, :func:`load`);
- :mod:`.frontmatter` reads ``SKILL.md`` frontmatter and applies the Agent Skills rules;
- :mod:`.media` gives each file its media type, text or blob;
- :mod:`.model` holds :class:`Skill` and :class:`SkillFile` and builds URIs and entries;
- :mod:`.catalog` answers the extension's methods from the loaded skills;
- :mod:`.dynamic` makes and checks the files of skills a function produces;
- :mod:`.extension` is the :class:`Skills` extension on the seam.
"""

from __future__ import annotations

from ...server.blueprints import DynamicSkillOptions
from ...server.blueprints import SkillOptions
from .catalog import SkillCatalog
from .dynamic import DynamicSkillError
from .errors import Problem
from .errors import SkillError
from .extension import Skills
from .loading import MAX_BYTES
from .loading import MAX_FILES
from .loading import SkillSource
from .loading import load
from .model import Skill
from .model import SkillFile

__all__ = [
    "MAX_BYTES",
    "MAX_FILES",
    "DynamicSkillError",
    "DynamicSkillOptions",
    "Problem",
    "Skill",
    "SkillCatalog",
    "SkillError",
    "SkillFile",
    "SkillOptions",
    "SkillSource",
    "Skills",
    "load",
]
