"""Server-to-client requests in Redis: a marker per request and a list for the answer.

The worker that sent the request waits with ``BLPOP`` on the answer list; the
worker that receives the client's answer pushes it there. Both keys carry the
session's hash tag.
"""

from __future__ import annotations

import json
import time
import typing as t

from ._redis_codec import dumps as _dumps
from ._redis_keys import Keys
from ._redis_listener import text as _text


class Answers:
    """Mixed into :class:`~flask_mcp.backends.redis.RedisBackend`."""

    keys: Keys
    client: t.Any
    _blocking: t.Any
    block_slice: float

    def _run(self, name: str, keys: list[str], *args: t.Any) -> t.Any:
        raise NotImplementedError

    def _errors(self) -> t.ContextManager[None]:
        raise NotImplementedError

    def next_request_id(self, session_id: str) -> int:
        return int(self._run("next_id", self.keys.session(session_id)))

    def _answer(self, session_id: str, rid: str) -> list[str]:
        return [*self.keys.session(session_id), *self.keys.answer(session_id, rid)]

    def expect_response(self, session_id: str, request_id: t.Any) -> None:
        self._run("expect", self._answer(session_id, _dumps(request_id)))

    def wait_response(
        self, session_id: str, request_id: t.Any, timeout: float
    ) -> dict[str, t.Any] | None:
        rid = _dumps(request_id)
        keys = self._answer(session_id, rid)
        deadline = time.monotonic() + timeout
        while True:
            reply = self._run("poll", keys)
            status = _text(reply[0])
            if status == "none":
                return None
            if status == "ok":
                return t.cast("dict[str, t.Any]", json.loads(reply[1]))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            with self._errors():
                found = self._blocking.blpop(
                    [keys[6]], timeout=max(0.01, min(remaining, self.block_slice))
                )
            if found is not None:
                with self._errors():
                    self.client.delete(keys[5])
                return t.cast("dict[str, t.Any]", json.loads(found[1]))

    def deliver_response(
        self, session_id: str, request_id: t.Any, message: dict[str, t.Any]
    ) -> bool:
        keys = self._answer(session_id, _dumps(request_id))
        return bool(self._run("deliver", keys, _dumps(message)))

    def forget_response(self, session_id: str, request_id: t.Any) -> None:
        with self._errors():
            self.client.delete(*self.keys.answer(session_id, _dumps(request_id)))


__all__ = ["Answers"]
