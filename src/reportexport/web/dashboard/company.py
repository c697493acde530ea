"""Sign-in through the company's identity provider: `/sign-in/company` sends the browser to the
provider, `/sign-in/company/callback` takes it back and starts an ordinary dashboard session.

What the callback must find again (the state, the nonce, the PKCE verifier and where to go
next) travels in a short-lived HttpOnly cookie scoped to these two paths: only this site sets
it, so a callback that carries another state is refused, and a code meant for another browser
is worth nothing here.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from reportexport.services.company_sign_in import CompanySignIn, SignInRefusedError
from reportexport.web.dashboard.guards import page_router
from reportexport.web.dashboard.routes import sign_in_form
from reportexport.web.dashboard.session import client_address, is_https, start_session
from reportexport.web.dashboard.ui import problem_page, redirect, safe_next
from reportexport.web.deps import parts

router = APIRouter(include_in_schema=False)
anyone = page_router()
COOKIE = "rx_company"
COOKIE_PATH = "/sign-in/company"
COOKIE_SECONDS = 600  # the time a person may take at the provider's page


def _company(request: Request) -> CompanySignIn | None:
    return parts(request).company


@anyone.get("/sign-in/company")
async def start(request: Request, next: str = "/jobs") -> Response:
    company = _company(request)
    if company is None:
        return _not_here(request)
    try:
        started = await run_in_threadpool(company.start)
    except SignInRefusedError as exc:
        return _refused(request, exc.detail, status=503)
    response = RedirectResponse(started.url, status_code=303)
    carried = {"state": started.state, "nonce": started.nonce,
               "verifier": started.code_verifier, "next": safe_next(next)}  # fmt: skip
    response.set_cookie(
        COOKIE,
        base64.urlsafe_b64encode(json.dumps(carried).encode()).decode(),
        max_age=COOKIE_SECONDS,
        httponly=True,
        samesite="lax",  # the provider sends the browser back with a top-level GET
        secure=is_https(request),
        path=COOKIE_PATH,
    )
    return response


@anyone.get("/sign-in/company/callback")
async def callback(
    request: Request,
    code: str = "",
    state: str = "",
    error: str = "",
    error_description: str = "",
) -> Response:
    company = _company(request)
    if company is None:
        return _not_here(request)
    if error:  # grants nothing, so it needs no state (some providers send none with it)
        said = f"{error}: {error_description}" if error_description else error
        company.refused_at_provider(said[:300])
        return _refused(request, f"Your company's sign-in refused: {said[:300]}.")
    carried = _carried(request)
    if carried is None or not hmac.compare_digest(
        carried["state"].encode(), state.encode("utf-8", "surrogatepass")
    ):
        return _refused(
            request, "This sign-in did not start here, or took too long; please start again."
        )
    if not code:
        return _refused(request, "The identity provider sent no code; please start again.")
    try:
        started = await run_in_threadpool(
            company.finish, code=code, code_verifier=carried["verifier"],
            nonce=carried["nonce"], client=client_address(request),
        )  # fmt: skip
    except SignInRefusedError as exc:
        return _refused(request, f"{exc.detail[:1].upper()}{exc.detail[1:]}.")
    response = redirect(
        request, safe_next(carried["next"]), "success", f"Signed in as {started.user.name}."
    )
    start_session(request, response, started)
    response.delete_cookie(COOKIE, path=COOKIE_PATH)
    return response


def _carried(request: Request) -> dict[str, str] | None:
    raw = request.cookies.get(COOKIE, "")
    try:
        data = json.loads(base64.urlsafe_b64decode(raw.encode()))
    except (ValueError, binascii.Error):
        return None
    wanted = ("state", "nonce", "verifier", "next")
    if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in wanted):
        return None
    return {key: data[key] for key in wanted}


def _refused(request: Request, detail: str, *, status: int = 403) -> Response:
    response = sign_in_form(request, "/jobs", detail, status=status)
    response.delete_cookie(COOKIE, path=COOKIE_PATH)
    return response


def _not_here(request: Request) -> Response:
    return problem_page(
        request,
        None,
        404,
        "No company sign-in here",
        "This service signs people in with their token only.",
        actions=[("Sign in with a token", "/sign-in")],
    )


router.include_router(anyone)
