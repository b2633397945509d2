"""A pure ASGI middleware that refuses bodies over the size limit with a 413, streamed or not."""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def _message(limit: int) -> str:
    return f"the request body exceeds the limit of {limit} bytes"


class BodySizeLimit:
    """Refuses a declared Content-Length over `limit` at once, and counts streamed bodies."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", ())).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    # An HTTPException passes FastAPI's body parsing untouched; the one
                    # error handler renders it.
                    raise HTTPException(413, _message(self.limit))
            return message

        await self.app(scope, limited_receive, send)

    async def _refuse(self, send: Send) -> None:
        error = {"code": "payload_too_large", "message": _message(self.limit), "details": None}
        body = json.dumps({"error": error}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
