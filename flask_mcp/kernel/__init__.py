"""The kernel: the extension seam (:mod:`~flask_mcp.kernel.extension`).

It sits above the server (the dispatcher and the registry it wires extensions
into) and below the extensions written against it.
"""
