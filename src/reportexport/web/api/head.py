"""HEAD as browsers and tools expect it: the headers a GET would answer, without the body.

FastAPI answers HEAD with 405 on its own routes; here a HEAD request is run as the GET and its
body dropped. A route that can answer without producing its body (a file download) looks at
`is_head(request)` and skips the work.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEAD_FLAG = "reportexport.head"


def is_head(request: Request) -> bool:
    return bool(request.scope.get(HEAD_FLAG))


class HeadAsGet:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if not message.get("more_body", False):
                    await send({"type": "http.response.body", "body": b""})
                return
            await send(message)

        await self.app({**scope, "method": "GET", HEAD_FLAG: True}, receive, headers_only)
