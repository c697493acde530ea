"""Who is at the dashboard: the session cookie, its CSRF token, and one-time flash messages.

The session cookie holds an opaque id (never the API token): HttpOnly, SameSite=Lax, Secure
when the request came over HTTPS (or a trusted proxy says it did), scoped to the whole site.
The sign-in form, which has no session yet, is guarded by a double-submitted random value in a
SameSite=Strict cookie, so no other site can sign a browser in as someone else.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import datetime

from fastapi import Request
from fastapi.responses import Response

from reportexport.core.records import User
from reportexport.services.sessions import Started
from reportexport.web.deps import parts

SESSION_COOKIE = "rx_session"
SIGN_IN_COOKIE = "rx_sign_in"
FLASH_COOKIE = "rx_flash"
CSRF_FIELD = "csrf-token"
FLASH_KINDS = ("success", "info", "warning", "problem")
FLASH_LIMIT = 800  # characters: a whole bulk cancel's words, in a cookie well under 4 kB


def is_https(request: Request) -> bool:
    if request.url.scheme == "https":
        return True
    trusted = parts(request).web.trust_forwarded_headers
    forwarded = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    return trusted and forwarded == "https"


def client_address(request: Request) -> str:
    """The address a request came from (behind a trusted proxy: the one it saw). Every
    X-Forwarded-For line counts, in order: HAProxy adds a line of its own after any the client
    sent, so the first line alone would be the client's word."""
    if parts(request).web.trust_forwarded_headers:
        forwarded = [
            address.strip()
            for line in request.headers.getlist("x-forwarded-for")
            for address in line.split(",")
        ]
        if forwarded and forwarded[-1]:
            return forwarded[-1]
    return request.client.host if request.client else "unknown"


def session_id(request: Request) -> str:
    return request.cookies.get(SESSION_COOKIE, "")


def dashboard_user(request: Request) -> User | None:
    """The person whose live session the request's cookie names (looked up once a request)."""
    if "dashboard_user" not in request.scope:
        found = (
            parts(request).sessions.user_of(session_id(request)) if session_id(request) else None
        )
        request.scope["dashboard_user"] = found
    user: User | None = request.scope["dashboard_user"]
    return user


def csrf_token(request: Request) -> str:
    """The token this session's forms carry ("" without a session)."""
    sid = session_id(request)
    return parts(request).sessions.csrf_token(sid) if sid else ""


def csrf_holds(request: Request, given: str) -> bool:
    sid = session_id(request)
    return bool(sid) and parts(request).sessions.csrf_holds(sid, given)


def start_session(request: Request, response: Response, started: Started) -> None:
    seconds = max(1, int((started.expires_at - _now(started.expires_at)).total_seconds()))
    response.set_cookie(
        SESSION_COOKIE,
        started.session_id,
        max_age=seconds,
        httponly=True,
        samesite="lax",
        secure=is_https(request),
        path="/",
    )
    response.delete_cookie(SIGN_IN_COOKIE, path="/sign-in")


def end_session(request: Request, response: Response) -> None:
    parts(request).sessions.sign_out(session_id(request))
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax")


def sign_in_token(request: Request) -> str:
    """The sign-in form's double-submitted value: the browser's own, or a new one."""
    value = request.cookies.get(SIGN_IN_COOKIE, "")
    return value if len(value) == 43 else secrets.token_urlsafe(32)


def keep_sign_in_token(request: Request, response: Response, value: str) -> None:
    response.set_cookie(
        SIGN_IN_COOKIE,
        value,
        max_age=3600,
        httponly=True,
        samesite="strict",
        secure=is_https(request),
        path="/sign-in",
    )


def sign_in_token_holds(request: Request, given: str) -> bool:
    expected = request.cookies.get(SIGN_IN_COOKIE, "")
    return bool(expected) and hmac.compare_digest(
        expected.encode(), given.encode("utf-8", "surrogatepass")
    )


# -- flash messages -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Flash:
    kind: str
    text: str


def flash(request: Request, response: Response, kind: str, text: str) -> None:
    """A message the next page shows once (after a redirect)."""
    payload = json.dumps({"kind": kind, "text": text[:FLASH_LIMIT]}).encode()
    response.set_cookie(
        FLASH_COOKIE,
        base64.urlsafe_b64encode(payload).decode(),
        max_age=60,
        httponly=True,
        samesite="lax",
        secure=is_https(request),
        path="/",
    )


def take_flash(request: Request) -> Flash | None:
    raw = request.cookies.get(FLASH_COOKIE, "")
    if not raw:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(raw.encode()))
    except (ValueError, binascii.Error):
        return None
    if not isinstance(data, dict) or data.get("kind") not in FLASH_KINDS:
        return None
    return Flash(kind=str(data["kind"]), text=str(data.get("text", ""))[:FLASH_LIMIT])


def forget_flash(response: Response) -> None:
    response.delete_cookie(FLASH_COOKIE, path="/")


def _now(like: datetime) -> datetime:
    return datetime.now(like.tzinfo)
