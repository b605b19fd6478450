"""``flask mcp skills``: list skill folders and check them as serving them would."""

from __future__ import annotations

import pathlib
import sys
import typing as t

import click
from flask.cli import ScriptInfo

from ..extensions.skills import DynamicSkillError
from ..extensions.skills import Problem
from ..extensions.skills import SkillCatalog
from ..extensions.skills import SkillError
from ..extensions.skills import Skills
from ..extensions.skills import SkillSource
from ..extensions.skills.model import SKILL_FILE
from . import output


def sources_of(paths: t.Sequence[pathlib.Path], prefix: str) -> list[SkillSource]:
    """Return a source per path: one skill's directory if it holds SKILL.md, else a folder."""
    found = []
    for path in paths:
        absolute = path.resolve()
        kind: t.Literal["skill", "folder"] = (
            "skill" if (absolute / SKILL_FILE).is_file() else "folder"
        )
        found.append(SkillSource(kind, path=absolute, prefix=prefix.strip("/")))
    return found


def app_sources(ctx: click.Context) -> list[SkillSource]:
    """Return the skill sources the app declared (its Skills extension).

    :raises click.UsageError: the app serves no skills, or they cannot be found.
    """
    app = ctx.ensure_object(ScriptInfo).load_app()
    mcp = app.extensions.get("mcp")
    if mcp is None:
        raise click.UsageError(
            "Name the folders to check: flask mcp skills PATH... (a folder of skills, or one "
            "skill's directory)."
        )
    try:
        extension = t.cast(Skills, mcp.extension(Skills.id))
    except KeyError:
        raise click.UsageError(
            "The app serves no skills: declare some with mcp.skills_folder('skills'), or name "
            "the folders to check: flask mcp skills PATH..."
        ) from None
    return list(extension.catalog.sources)


def check(sources: t.Sequence[SkillSource]) -> tuple[SkillCatalog, list[Problem]]:
    """Load every source as registration does; return what loaded and every problem."""
    catalog = SkillCatalog()
    problems: list[Problem] = []
    for source in sources:
        try:
            problems += catalog.add(source)
        except SkillError as exc:
            problems += exc.problems
        except ImportError as exc:  # PyYAML is missing
            raise click.ClickException(str(exc)) from None
    for skill in catalog.skills:
        if skill.dynamic:
            try:
                catalog.produce(skill)
            except DynamicSkillError as exc:
                problems.append(Problem(skill.uri, str(exc)))
    return catalog, problems


def describe(catalog: SkillCatalog) -> list[tuple[str, str]]:
    """Return a row per skill: its URI, then its files, size, listing and description."""
    rows = []
    for skill in catalog.skills:
        if skill.dynamic:
            facts = "dynamic"
        else:
            count = len(skill.files or ())
            facts = f"{count} file{'s' if count != 1 else ''}, {skill.size} bytes"
        if not skill.listed:
            facts += ", not listed"
        description = (skill.frontmatter or {}).get("description", "")
        rows.append((skill.uri, f"{facts}  {output.first_line(description)}".rstrip()))
    return rows


@click.command("skills")
@click.argument("paths", nargs=-1, type=click.Path(path_type=pathlib.Path))
@click.option("--prefix", default="", help="Put these '/'-separated segments before skill paths.")
@click.option("--json", "as_json", is_flag=True, help="Print the skills/list entries as JSON.")
@click.pass_context
def skills_command(
    ctx: click.Context, paths: tuple[pathlib.Path, ...], prefix: str, as_json: bool
) -> None:
    """List skills and check them as serving them would; exit 1 on an error.

    PATH is a folder of skills (every <name>/SKILL.md below it is one) or the
    directory of one skill. Without PATH, the skills the app declares are read
    again from disk. Each problem names the file and the fix.
    """
    sources = sources_of(paths, prefix) if paths else app_sources(ctx)
    catalog, problems = check(sources)
    errors = [problem for problem in problems if problem.error]
    if as_json:
        entries = []
        for skill in catalog.skills:
            try:
                entries.append(catalog.entry(skill))
            except DynamicSkillError:
                continue  # reported below
        click.echo(output.dump({"skills": entries}))
    else:
        click.echo(output.table(describe(catalog)))
    for problem in problems:
        click.echo(f"{'error' if problem.error else 'note'}: {problem}", err=as_json)
    count = len(catalog.skills)
    summary = f"{count} skill{'s' if count != 1 else ''}"
    if errors:
        click.echo(
            f"{summary}; {len(errors)} error{'s' if len(errors) > 1 else ''} to fix.", err=True
        )
        sys.exit(1)
    if not as_json:
        click.echo(f"{summary}, all valid.")


__all__ = ["app_sources", "check", "describe", "skills_command", "sources_of"]
