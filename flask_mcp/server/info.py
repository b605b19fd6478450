"""Who a server is: its ``serverInfo`` object and its instructions."""

from __future__ import annotations

import dataclasses
import typing as t


@dataclasses.dataclass
class ServerInfo:
    """Who the server is: its ``serverInfo`` object and its instructions.

    :param name: ``serverInfo.name``.
    :param version: ``serverInfo.version``.
    :param fields: the whole ``serverInfo`` object (name, version, title, icons...).
    :param instructions: how to use the server, sent on ``initialize`` and ``server/discover``.
    """

    name: str
    version: str
    fields: dict[str, t.Any]
    instructions: str | None = None


__all__ = ["ServerInfo"]
