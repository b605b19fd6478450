"""The stdio tools app in a process gevent has monkey-patched (as a gevent app module may be).

Served as ``flask --app tests._apps.stdio_gevent mcp stdio``: handlers are greenlets, and
the reader of stdin must not block them.
"""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()

from tests._apps.stdio_tools import create_app  # noqa: E402

app = create_app()
