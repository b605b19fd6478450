"""An app serving skills and a Server Card, for gunicorn, stdio and the conformance suite.

- ``examples/skills`` (given relative to this module's folder), listed;
- the same folder again under ``internal/``, not listed (served to clients that know a URI);
- the dynamic skill ``reports/daily``, whose files a function makes;
- ``$SKILLS_WATCH_FOLDER`` under ``watched/`` when set (the debug-mode tests edit it),
  with the app's resource ``skill://watched/other/app.md``;
- a Server Card when ``FLASK_MCP_SERVER_CARD`` is true (added by ``init_app``);
- debug mode (the folders are watched) when ``SKILLS_DEBUG`` is ``1``;
- tools that disable or remove a resource while serving when ``SKILLS_ADMIN_TOOLS`` is ``1``;
- the dynamic skills ``reports/broken``, whose function raises, ``reports/huge``, past
  the limit of 512 files, and ``reports/stale``, whose ``SKILL.md`` says another
  description than its declaration, when ``SKILLS_BROKEN`` is ``1``.
"""

from __future__ import annotations

import datetime
import os

from flask import Flask

from flask_mcp import MCP
from flask_mcp.extensions.server_card import ServerCard

mcp = MCP(
    name="com.example/skills-demo",
    version="1.4.0",
    title="Skills demo",
    description="Runbooks of the platform team, served as Agent Skills.",
    website_url="https://example.com/skills",
)
mcp.skills().watch_interval = float(os.environ.get("SKILLS_WATCH_INTERVAL", "1.0"))
mcp.skills_folder("../../examples/skills")
mcp.skills_folder("../../examples/skills", prefix="internal", listed=False)
watched = os.environ.get("SKILLS_WATCH_FOLDER")
if watched:
    mcp.skills_folder(watched, prefix="watched")

    @mcp.resource("skill://watched/other/app.md", mime_type="text/markdown")
    def app_notes() -> str:
        """A resource of the app where a skill file of the watched folder may come."""
        return "the app's"


#: The description of ``reports/daily``, declared so that resources/list carries it.
DAILY = "Summarise today's operations report. Use when asked how the day went."


@mcp.dynamic_skill("reports/daily", ttl_ms=1000, description=DAILY)
def daily_report() -> dict[str, str | bytes]:
    """Today's report: the skill's files are made on each use."""
    today = datetime.date.today().isoformat()
    return {
        "SKILL.md": (
            f"---\nname: daily\ndescription: {DAILY}\nmetadata:\n  date: '{today}'\n---\n\n"
            "Read `data/summary.csv` and report the three largest changes.\n"
        ),
        "data/summary.csv": f"date,requests,errors\n{today},1200,3\n",
    }


if os.environ.get("SKILLS_BROKEN") == "1":

    @mcp.dynamic_skill("reports/broken")
    def broken_report() -> dict[str, str | bytes]:
        """A skill whose function fails, as one whose database is down does."""
        raise RuntimeError("the reports database is down")

    @mcp.dynamic_skill("reports/huge")
    def huge_report() -> dict[str, str | bytes]:
        """A skill past the extension's limit of 512 files, which no host need accept."""
        files: dict[str, str | bytes] = {f"rows/{n}.csv": "n\n" for n in range(512)}
        return {"SKILL.md": "---\nname: huge\ndescription: Every row.\n---\n", **files}

    @mcp.dynamic_skill("reports/stale", description="Last week's report.")
    def stale_report() -> dict[str, str | bytes]:
        """A skill whose SKILL.md no longer says what its declaration says."""
        return {"SKILL.md": "---\nname: stale\ndescription: This week's report.\n---\n"}


@mcp.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


if os.environ.get("SKILLS_ADMIN_TOOLS") == "1":

    @mcp.tool()
    def disable_resource(uri: str) -> str:
        """Disable the resource ``uri`` while serving, as an admin tool of the app might."""
        try:
            mcp.disable(uri)
        except ValueError as exc:
            return f"refused: {exc}"
        return "disabled"

    @mcp.tool()
    def remove_resource(uri: str) -> str:
        """Remove the resource ``uri`` while serving."""
        try:
            mcp.remove_resource(uri)
        except ValueError as exc:
            return f"refused: {exc}"
        return "removed"


mcp.add_extension(
    ServerCard(repository={"url": "https://github.com/example/skills", "source": "github"})
)

app = Flask(__name__)
app.config.update(SECRET_KEY="skills-e2e")
app.config.from_prefixed_env()
app.debug = os.environ.get("SKILLS_DEBUG") == "1"
mcp.init_app(app)
