"""Who may use a dashboard route, said once by its router instead of in each route.

Routers are made here: `page_router(SIGNED_IN)` for pages (a signed-out browser goes to the
sign-in page, which brings it back), `page_router(FEED)` for a live page's data (401),
`page_router(OPERATOR)` for the operators' pages (anyone else gets "For operators only"),
`page_router()` for pages open to anyone, and `form_router(back)` for forms: signed in (an
operator, with `operators=True`) and carrying this session's CSRF token, or nothing is done and
the answer is "This form has expired" with a way back to where the form lives (`back`).
A route asks for the person as `user: SignedIn`, `user: SignedInFeed` or `user: Operator`
(found once a request).
`tests/api/test_dashboard_guards.py` holds every dashboard route to one of these.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.params import Depends as DependsParam
from fastapi.responses import Response
from fastapi.routing import APIRoute
from starlette.requests import ClientDisconnect

from reportexport.core.records import User
from reportexport.web.dashboard.forms import QUERY_FIELD, form_href
from reportexport.web.dashboard.session import CSRF_FIELD, csrf_holds, dashboard_user
from reportexport.web.dashboard.ui import (
    back_within,
    form_expired,
    form_fields,
    id_of,
    not_for_you,
    to_sign_in,
)
from reportexport.web.problems import ProblemError


class SignedOutError(Exception):
    """No live session: the sign-in page answers."""


class NotAnOperatorError(Exception):
    def __init__(self, user: User) -> None:
        super().__init__(user.name)
        self.user = user


class FormExpiredError(Exception):
    """A form without this session's CSRF token: nothing was done."""

    def __init__(self, user: User, back: str) -> None:
        super().__init__(back)
        self.user = user
        self.back = back


def signed_in(request: Request) -> User:
    user = dashboard_user(request)
    if user is None:
        raise SignedOutError
    return user


def signed_in_feed(request: Request) -> User:
    """The person a live page's script asks for (it reads 401, not a sign-in page)."""
    user = dashboard_user(request)
    if user is None:
        raise ProblemError(401, "Unauthorized", "sign in to the dashboard first")
    return user


SignedIn = Annotated[User, Depends(signed_in)]
SignedInFeed = Annotated[User, Depends(signed_in_feed)]


def operator(user: SignedIn) -> User:
    if not user.is_operator:
        raise NotAnOperatorError(user)
    return user


Operator = Annotated[User, Depends(operator)]
SIGNED_IN = Depends(signed_in)
FEED = Depends(signed_in_feed)
OPERATOR = Depends(operator)

# Where a refused form leads back to, from the request and the form's fields as sent.
Back = Callable[[Request, Mapping[str, str]], str]


class SameSession:
    """The CSRF check of a router's forms."""

    def __init__(self, back: Back) -> None:
        self.back = back

    async def __call__(self, request: Request, user: SignedIn) -> None:
        fields = dict(await form_fields(request))
        if not csrf_holds(request, fields.get(CSRF_FIELD, "")):
            raise FormExpiredError(user, self.back(request, fields))


def new_export_form(request: Request, fields: Mapping[str, str]) -> str:
    """Back to the New export form of the saved query the form was sent for."""
    return form_href(fields.get(QUERY_FIELD, ""))


def to_page(path: str) -> Back:
    """Back to one page."""
    return lambda request, fields: path


def page_of(section: str, parameter: str) -> Back:
    """Back to the page of what the path names (`section/ID`), or to the section."""

    def back(request: Request, fields: Mapping[str, str]) -> str:
        number = id_of(str(request.path_params.get(parameter, "")))
        return section if number is None else f"{section}/{number}"

    return back


def sent_from(section: str) -> Back:
    """Back to the page the form names in its `back` field, when that is in `section`."""

    def back(request: Request, fields: Mapping[str, str]) -> str:
        return back_within(fields.get("back", ""), section)

    return back


class FormRoute(APIRoute):
    """A form's route: the body is kept as sent, so the CSRF check, the route's form
    parameters and a route that reads the bytes itself (`ui.form_fields`) all read it."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def keeping_the_body(request: Request) -> Response:
            try:
                await request.body()
            except ClientDisconnect:
                return Response(status_code=400)  # as the framework answers: to no one
            return await handle(request)

        return keeping_the_body


def page_router(*guards: DependsParam) -> APIRouter:
    """Pages behind `guards` (none: open to anyone)."""
    return APIRouter(include_in_schema=False, dependencies=list(guards))


def form_router(back: Back, *, operators: bool = False) -> APIRouter:
    """Forms of a signed-in person (an operator's, with `operators`), each checked for the
    session's CSRF token; a refused one leads back to `back`."""
    return APIRouter(
        include_in_schema=False,
        dependencies=[OPERATOR if operators else SIGNED_IN, Depends(SameSession(back))],
        route_class=FormRoute,
    )


def install(app: FastAPI) -> None:
    """The pages the guards answer with."""

    def on_signed_out(request: Request, exc: Exception) -> Response:
        return to_sign_in(request)

    def on_not_an_operator(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, NotAnOperatorError)
        return not_for_you(request, exc.user)

    def on_form_expired(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, FormExpiredError)
        return form_expired(request, exc.user, exc.back)

    app.add_exception_handler(SignedOutError, on_signed_out)
    app.add_exception_handler(NotAnOperatorError, on_not_an_operator)
    app.add_exception_handler(FormExpiredError, on_form_expired)
