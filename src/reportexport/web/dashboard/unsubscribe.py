"""The one-click unsubscribe link of an e-mail (RFC 8058): `POST /unsubscribe/TOKEN` stops the
e-mails its person gets whenever one of their exports ends, or those of the schedule it names.

A mail provider POSTs `List-Unsubscribe=One-Click` to the link without a session or a CSRF
token, so the link's signature is what allows it. A GET changes nothing (link checkers open
links): it shows a page whose button sends that POST.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from reportexport.services.errors import NotFoundError
from reportexport.web.dashboard.guards import page_router
from reportexport.web.dashboard.ui import page, problem_page
from reportexport.web.deps import parts

router = APIRouter(include_in_schema=False)
anyone = page_router()
PATH = "/unsubscribe/{token}"


@anyone.get(PATH)
async def asked(request: Request, token: str) -> Response:
    return await _answer(request, token, stop=False)


@anyone.post(PATH)
async def stop(request: Request, token: str) -> Response:
    return await _answer(request, token, stop=True)


async def _answer(request: Request, token: str, *, stop: bool) -> Response:
    try:
        said = await run_in_threadpool(parts(request).people.unsubscribed_by_link, token,
                                       stop=stop)  # fmt: skip
    except NotFoundError:
        return _unknown(request)
    return page(request, "unsubscribe.html", None, said=said, token=token)


def _unknown(request: Request) -> Response:
    return problem_page(
        request,
        None,
        404,
        "No such unsubscribe link",
        "This link stops no e-mails: it was cut short, changed, or its person is gone.",
    )


router.include_router(anyone)
