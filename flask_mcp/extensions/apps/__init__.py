"""MCP Apps (``io.modelcontextprotocol/ui``): tools whose results render as HTML views.

- :class:`Apps`, the extension (added to every ``MCP``): views (``mcp.ui``,
  ``mcp.ui_template``), the tool options ``ui=`` and ``visibility=``, the capability;
- :func:`client_supports_ui`: does this request's client render views (also
  ``ctx.client_supports_ui()``);
- :func:`ui_meta` and :func:`render_view`: a view's ``_meta.ui`` and its
  ``resources/read`` content item, for views declared with ``@mcp.resource``;
- the template helpers (:func:`add_template_helpers`): ``mcp_app_script``,
  ``mcp_app_style``, ``mcp_app_data_uri``, ``mcp_app_asset_url``;
- ``static/mcp-app.js``: the view side of the protocol, for views without a build step.

See :doc:`/apps`.
"""

from __future__ import annotations

from ...protocol.apps import APP_MIME_TYPE as APP_MIME_TYPE
from ...protocol.apps import EXTENSION_ID as EXTENSION_ID
from .assets import add_template_helpers as add_template_helpers
from .assets import helper_source as helper_source
from .assets import mcp_app_asset_url as mcp_app_asset_url
from .assets import mcp_app_data_uri as mcp_app_data_uri
from .assets import mcp_app_script as mcp_app_script
from .assets import mcp_app_style as mcp_app_style
from .extension import Apps as Apps
from .extension import ClientFacts as ClientFacts
from .extension import client_supports_ui as client_supports_ui
from .views import View as View
from .views import ViewOptions as ViewOptions
from .views import check_html as check_html
from .views import check_ui_uri as check_ui_uri
from .views import render_view as render_view
from .views import ui_meta as ui_meta

__all__ = [
    "APP_MIME_TYPE",
    "EXTENSION_ID",
    "Apps",
    "ClientFacts",
    "View",
    "ViewOptions",
    "add_template_helpers",
    "check_html",
    "check_ui_uri",
    "client_supports_ui",
    "helper_source",
    "mcp_app_asset_url",
    "mcp_app_data_uri",
    "mcp_app_script",
    "mcp_app_style",
    "render_view",
    "ui_meta",
]
