"""uvicorn's HTTP parser, answering in the one error shape what it refuses before the app.

uvicorn's httptools protocol answers a request it cannot parse with a plain-text
``400 Invalid HTTP request received.``: a request line past 64 KiB is one (httptools keeps a
URL's offsets in 16 bits). Here the URL is held to ``TOOLREACH_MAX_URL_BYTES`` while it is
read (a 414), and whatever else the parser refuses is a 400, both in the error shape
(``{"error": {"code", "message", "details"}}``, app/api/error_handlers.py).

``toolreach serve`` runs :func:`protocol_class`; the app's own ``UrlLengthLimit``
(app/api/middleware.py) holds the same limit under any other server.
"""

from __future__ import annotations

import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from app.api.middleware import url_message


class UrlTooLong(Exception):
    """Raised in the parser's URL callback: httptools stops parsing the request."""


class ShapedHttpToolsProtocol(HttpToolsProtocol):
    """HttpToolsProtocol with a URL length limit and its refusals in the error shape."""

    max_url_bytes = 8192

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.url_too_long = False

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.max_url_bytes:
            self.url_too_long = True
            raise UrlTooLong

    def send_400_response(self, msg: str) -> None:
        if self.url_too_long:
            body = _shape("uri_too_long", url_message(self.max_url_bytes))
            self._send_and_close(414, body)
        else:
            self._send_and_close(400, _shape("bad_request", "the request is not valid HTTP"))

    def _send_and_close(self, status: int, body: bytes) -> None:
        content = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend(
            [
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
                b"connection: close\r\n",
                b"\r\n",
                body,
            ]
        )
        self.transport.write(b"".join(content))
        self.transport.close()


def _shape(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message, "details": None}}).encode()


def protocol_class(max_url_bytes: int) -> type[ShapedHttpToolsProtocol]:
    """The protocol class for ``uvicorn.run(http=...)`` with this URL limit."""
    return type(
        "ShapedHttpToolsProtocol", (ShapedHttpToolsProtocol,), {"max_url_bytes": max_url_bytes}
    )
