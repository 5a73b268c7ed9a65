"""ASGI middleware that answers 413 to request bodies over the configured size.

Owns: the byte count — the declared Content-Length is checked up front and the streamed
body is counted as it arrives (chunked uploads declare nothing). Knows nothing about
routes or what the body means.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.errors import PayloadTooLarge, error_response


class BodyTooLarge(Exception):
    """Raised into the app from `receive` when the streamed body passes the limit."""


class LimitRequestBody:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int):
        self.app = app
        self.max_body_bytes = max_body_bytes

    def _too_large(self) -> PayloadTooLarge:
        return PayloadTooLarge(
            f"Request body is larger than the limit of {self.max_body_bytes} bytes."
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                if not value.isdigit() or int(value) > self.max_body_bytes:
                    await error_response(self._too_large())(scope, receive, send)
                    return
                break

        received = 0
        overflowed = False
        response_started = False

        async def counting_receive() -> Message:
            nonlocal received, overflowed
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    overflowed = True
                    raise BodyTooLarge
            return message

        async def send_unless_overflowed(message: Message) -> None:
            # Whatever the app answers after the overflow (its body parser turns our
            # exception into a 400) is replaced by the 413.
            nonlocal response_started
            if overflowed:
                return
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, send_unless_overflowed)
        except BodyTooLarge:
            assert overflowed  # answered below, like an overflow the app turned into a 400
        if overflowed and not response_started:
            await error_response(self._too_large())(scope, receive, send)
