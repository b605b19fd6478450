"""Protocol extensions built on the extension seam, one module or package each.

Nothing here is imported by the core: an extension is imported when the app adds it.
``apps`` is MCP Apps (``io.modelcontextprotocol/ui``), ``skills`` the Skills extension
(``io.modelcontextprotocol/skills``), ``server_card`` the Server Card.
"""
