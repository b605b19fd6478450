"""An app serving skills and a Server Card, for gunicorn, stdio and the conformance suite.

- ``examples/skills`` (given relative to this module's folder), listed;
- the same folder again under ``internal/``, not listed (served to clients that know a URI);
- the dynamic skill ``reports/daily``, whose files a function makes;
- ``$SKILLS_WATCH_FOLDER`` under ``watched/`` when set (the debug-mode tests edit it);
- a Server Card when ``FLASK_MCP_SERVER_CARD`` is true;
- debug mode (the folders are watched) when ``SKILLS_DEBUG`` is ``1``.

The extensions are attached with ``tests/seam_bridge.py`` until the extension seam is merged.
"""

from __future__ import annotations

import datetime
import os

import seam_bridge
from flask import Flask

from flask_mcp import MCP
from flask_mcp.extensions.server_card import ServerCard
from flask_mcp.extensions.skills import Skills

mcp = MCP(
    name="com.example/skills-demo",
    version="1.4.0",
    title="Skills demo",
    description="Runbooks of the platform team, served as Agent Skills.",
    website_url="https://example.com/skills",
)
skills = Skills()
skills.watch_interval = float(os.environ.get("SKILLS_WATCH_INTERVAL", "1.0"))
skills.add_folder("../../examples/skills")
skills.add_folder("../../examples/skills", prefix="internal", listed=False)
watched = os.environ.get("SKILLS_WATCH_FOLDER")
if watched:
    skills.add_folder(watched, prefix="watched")


@skills.dynamic("reports/daily")
def daily_report() -> dict[str, str | bytes]:
    """Today's report: the skill's files are made on each use."""
    today = datetime.date.today().isoformat()
    return {
        "SKILL.md": (
            "---\nname: daily\ndescription: Summarise today's operations report. Use when "
            f"asked how the day went.\nmetadata:\n  date: '{today}'\n---\n\n"
            "Read `data/summary.csv` and report the three largest changes.\n"
        ),
        "data/summary.csv": f"date,requests,errors\n{today},1200,3\n",
    }


@mcp.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


card = ServerCard(repository={"url": "https://github.com/example/skills", "source": "github"})
seam_bridge.add_extension(mcp, skills)
seam_bridge.add_extension(mcp, card)

app = Flask(__name__)
app.config.update(SECRET_KEY="skills-e2e")
app.config.from_prefixed_env()
app.debug = os.environ.get("SKILLS_DEBUG") == "1"
mcp.init_app(app)
seam_bridge.init_app(app, mcp, skills)
seam_bridge.init_app(app, mcp, card)
