"""The stdio tools app in a process gevent has monkey-patched (as a gevent app module may be).

Served as ``flask --app tests._apps.stdio_gevent mcp stdio``: handlers are greenlets, and
the reader of stdin must not block them. It prints when imported: stdout must stay clean.
"""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()

from tests._apps.stdio_tools import create_app  # noqa: E402

print("importing stdio_gevent")  # noqa: T201 - must reach stderr, not the message stream
app = create_app()
