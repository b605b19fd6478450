"""A platform team's runbooks served as Agent Skills, with a Server Card.

The folder ``examples/skills`` next to this module holds two skills
(``flask-deploy`` and the nested ``ops/incident-triage``); see docs/skills.md.

.. code-block:: bash

    pip install -e '.[skills]'
    flask --app examples.skills_server mcp skills       # check the folder
    gunicorn -k gevent -b 127.0.0.1:8000 examples.skills_server:app
    curl -i http://127.0.0.1:8000/mcp/server-card       # the Server Card
"""

from __future__ import annotations

from flask import Flask

from flask_mcp import MCP

mcp = MCP(
    name="com.example/platform-runbooks",
    version="1.0.0",
    title="Platform runbooks",
    description="Runbooks of the platform team, served as Agent Skills.",
    instructions=("During an incident, load the skill skill://ops/incident-triage/SKILL.md first."),
)
mcp.skills_folder("skills")  # relative to this module's folder


def create_app() -> Flask:
    """Return an app serving the skills, with the Server Card on."""
    flask_app = Flask(__name__)
    flask_app.config["MCP_SERVER_CARD"] = True  # experimental, off by default
    flask_app.config.from_prefixed_env()
    mcp.init_app(flask_app)
    return flask_app


app = create_app()
