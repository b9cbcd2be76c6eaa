"""Bearer-token check for the HTTP transport: every request without the token gets a 401."""

from __future__ import annotations

import hmac

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send


class BearerTokenMiddleware:
    """Wraps the whole ASGI app (every path, every method), so no route can be reached without
    ``Authorization: Bearer <token>``. Lifespan events pass through untouched."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("an empty bearer token would let everyone in")
        self.app = app
        self._token = token.encode("utf-8")

    def authorized(self, headers: Headers) -> bool:
        scheme, _, credentials = headers.get("authorization", "").partition(" ")
        # compare_digest: the time taken must not tell how much of a guess was right.
        return scheme.lower() == "bearer" and hmac.compare_digest(
            credentials.strip().encode("utf-8"), self._token
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan" or self.authorized(Headers(scope=scope)):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        response = JSONResponse(
            {
                "error": "invalid_token",
                "error_description": "send the server's token as 'Authorization: Bearer <token>'",
            },
            status_code=401,
            headers={"WWW-Authenticate": 'Bearer realm="kg"'},
        )
        await response(scope, receive, send)
