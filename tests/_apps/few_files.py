"""The app of :mod:`.behind_proxy` (``ProxyFix``) in a worker that may open only 200 files,
so that what one client's streams take of a gevent worker's open files (its connections) is
cheap to exhaust."""

from __future__ import annotations

import resource

FILES = 200
resource.setrlimit(resource.RLIMIT_NOFILE, (FILES, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

from tests._apps.behind_proxy import app  # noqa: E402  (the limit is set first)

__all__ = ["app"]
