"""Extensions of the protocol, each a package or module of its own (DESIGN.md, section 3).

``apps`` is MCP Apps (``io.modelcontextprotocol/ui``): tools that render an interactive
HTML view in the host.
"""
