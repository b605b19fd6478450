"""An app for the tests of what a task asks its client: URL elicitations, answers, keys."""

from __future__ import annotations

import collections
import threading
import time

from flask import Flask

from flask_mcp import MCP
from flask_mcp import ClientRequestError
from flask_mcp import Context
from flask_mcp import MCPError
from flask_mcp import URLElicitationRequired

mcp = MCP(name="task-inputs", version="1.0.0")
#: How many times ``connect`` ran for each account (one gunicorn worker).
RUNS: collections.Counter[str] = collections.Counter()
_lock = threading.Lock()


@mcp.tool(task="optional")
def connect(account: str, ctx: Context) -> str:
    """Need the user to connect ``account`` on a page first: the first run of each asks."""
    with _lock:
        RUNS[account] += 1
        runs = RUNS[account]
    if runs == 1:
        raise URLElicitationRequired(
            [
                {
                    "mode": "url",
                    "elicitationId": f"connect-{account}",
                    "url": f"https://example.com/connect?account={account}",
                    "message": f"Connect {account}.",
                }
            ]
        )
    return f"{account} connected on run {runs}"


@mcp.tool(task="optional")
def visit(ctx: Context) -> str:
    """Ask the user to visit a page with a URL elicitation built by hand (``ctx.ask``)."""
    url = "https://example.com/visit"
    params = {"mode": "url", "message": "Visit.", "url": url, "elicitationId": "visit-1"}
    return str(ctx.ask({"visit": ("elicitation/create", params)})["visit"]["action"])


@mcp.tool(task="optional")
def summary(ctx: Context) -> str:
    """Ask the client's model for a summary; say why there is none if the client refuses."""
    prompt = [{"role": "user", "content": {"type": "text", "text": "Sum it up."}}]
    try:
        answer = ctx.create_message(prompt, 50)
    except ClientRequestError as exc:
        return f"no summary: {exc} ({exc.error})"
    return str(answer["content"]["text"])


YES = {"type": "object", "properties": {"yes": {"type": "boolean"}}, "required": ["yes"]}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@mcp.tool(task="optional")
def sign_in(account: str, tag: str, ctx: Context) -> str:
    """Ask the user's name, then need them to connect ``account`` on a page: the first run
    of each ``tag`` past the question asks; the next says what the user answered. Each
    run reports its progress from the start."""
    name = ctx.elicit("Your name?", NAME)["content"]["name"]
    with _lock:
        RUNS[tag] += 1
        runs = RUNS[tag]
    ctx.progress(1, 2, f"run {runs}")
    if runs == 1:
        url = f"https://example.com/connect?account={account}"
        raise URLElicitationRequired(
            [{"mode": "url", "elicitationId": "sign-in", "url": url, "message": "Sign in."}]
        )
    action = ctx.input_responses.get("sign-in", {}).get("action")
    return f"{name} signed in to {account} on run {runs} ({action})"


@mcp.tool(task="optional")
def twice(ctx: Context) -> str:
    """Ask the same question twice, under the same key of the handler's."""
    first = ctx.elicit("First?", YES, key="confirm")
    second = ctx.elicit("Second?", YES, key="confirm")
    return f"{first['content']['yes']} {second['content']['yes']}"


@mcp.tool(task="optional")
def chatty(ctx: Context, steps: int = 3) -> str:
    """Ask to go on, then report progress and log at each step (neither goes on a task's
    listen stream: a listen opened while the task waits sees every step)."""
    ctx.elicit("Go?", YES)
    for step in range(steps):
        ctx.progress(step + 1, steps, f"step {step + 1}")
        ctx.info(f"did step {step + 1}")
        time.sleep(0.05)
    return f"{steps} steps"


@mcp.tool(task="optional")
def gauged(ctx: Context) -> str:
    """Report progress, ask to go on, then report twice more."""
    ctx.progress(1, 3, "asked")
    ctx.elicit("Go on?", YES)
    for step in (2, 3):
        ctx.progress(step, 3)
        time.sleep(0.3)
    return "gauged"


@mcp.tool(task="optional")
def broken() -> str:
    """Fail with a JSON-RPC error."""
    raise MCPError(-32603, "broken on purpose")


@mcp.tool(task="optional")
def stubborn(seconds: float = 1.0) -> str:
    """Work ``seconds`` without looking at ``ctx.cancelled`` (a thread runs on when
    cancelled; see ``GET /finished``)."""
    time.sleep(seconds)
    with _lock:
        RUNS["stubborn"] += 1
    return "finished anyway"


app = Flask(__name__)
app.config.from_prefixed_env()
app.config.update(SECRET_KEY="task-inputs")
mcp.init_app(app)


@app.get("/finished")
def finished() -> dict[str, int]:
    """How many ``stubborn`` runs went to their end in this worker."""
    return {"stubborn": RUNS["stubborn"]}
