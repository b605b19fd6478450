"""One reading of Flask's URL-variable syntax for every feature that meets ``MCP_PATH``."""

from __future__ import annotations

import pytest
from werkzeug.routing import Map
from werkzeug.routing import Rule

from flask_mcp import url_rules
from flask_mcp.auth.metadata import fill_path_args
from flask_mcp.auth.metadata import resource_pattern
from flask_mcp.contrib.views import openapi_path
from flask_mcp.transport.path_args import example_path

RULES = [
    "/mcp",
    "/t/<tenant>/mcp",
    "/t/<int:n>/<string(length=2):lang>/mcp",
    "/files/<path:rest>",
    "/u/<uuid:id>/x/<any(a, b):which>",
]


@pytest.mark.parametrize("rule", RULES)
def test_the_names_are_werkzeug_s(rule: str) -> None:
    """The names read are the ones Werkzeug binds, in order."""
    bound = Rule(rule)
    Map([bound])
    assert set(url_rules.variables(rule)) == bound.arguments
    assert url_rules.has_variables(rule) is bool(bound.arguments)


def test_each_user_of_the_syntax() -> None:
    """The OpenAPI path, the example path, the filled resource and its pattern."""
    rule = "/t/<int:n>/<string(length=2):lang>/mcp"
    assert openapi_path(Rule(rule)) == "/t/{n}/{lang}/mcp"
    assert example_path(rule) == "/t/1/LANG/mcp"
    assert fill_path_args("https://x.test" + rule, {"n": 3}) == (
        "https://x.test/t/3/<string(length=2):lang>/mcp"
    )
    pattern = resource_pattern("https://x.test/files/<path:rest>/<id>")
    assert pattern is not None
    assert pattern.fullmatch("https://x.test/files/a/b/c/7")
    assert not pattern.fullmatch("https://x.test/files/a/b/c/7/")
