"""Signed links: expiring download links for objects the service serves itself (the local
store), and the one-click unsubscribe links of e-mails (RFC 8058), which do not expire."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any


class LinkError(ValueError):
    """A download token that is forged, malformed or expired; `expired` tells which."""

    def __init__(self, message: str, *, expired: bool = False) -> None:
        super().__init__(message)
        self.expired = expired


def sign_download(
    secret: bytes, key: str, file_name: str, expires_in: int, *, now: float | None = None
) -> str:
    expires = int((time.time() if now is None else now) + expires_in)
    return _signed(secret, b"", {"k": key, "f": file_name, "e": expires})


def verify_download(secret: bytes, token: str, *, now: float | None = None) -> tuple[str, str]:
    """The (key, file name) a valid token grants; LinkError otherwise."""
    data = _verified(secret, b"", token, "download link")
    try:
        key, file_name, expires = data["k"], data["f"], data["e"]
    except (TypeError, KeyError):
        raise LinkError("malformed download link") from None
    if not (isinstance(key, str) and isinstance(file_name, str) and isinstance(expires, int)):
        raise LinkError("malformed download link")
    if (time.time() if now is None else now) > expires:
        raise LinkError("download link has expired", expired=True)
    return key, file_name


# What an unsubscribe link's signature covers before its body: a download link's signature (the
# same secret) never fits one, nor the reverse.
UNSUBSCRIBE = b"reportexport unsubscribe\x00"


def sign_unsubscribe(
    secret: bytes, person: str | None, address: str, *, schedule_id: int | None = None
) -> str:
    """A token that stops the e-mails `person` gets at `address` when any of their exports
    ends, or, with `schedule_id`, those of that schedule they are a recipient of (an address
    given them later is not stopped by it); with no person, those of that schedule to
    `address`, one of its outside addresses."""
    if person is None and schedule_id is None:
        raise ValueError("an outside address's link names its schedule")
    body: dict[str, object] = {"a": address_digest(address)}
    if person is not None:
        body["u"] = person
    if schedule_id is not None:
        body["s"] = schedule_id
    return _signed(secret, UNSUBSCRIBE, body)


@dataclass(frozen=True)
class UnsubscribeLink:
    """What a valid unsubscribe token names."""

    person: str | None  # None: an outside address of the schedule
    address_digest: str  # of the address it was sent to (`address_digest`)
    schedule_id: int | None = None  # the schedule it stops; None: the owner's every-export


def verify_unsubscribe(secret: bytes, token: str) -> UnsubscribeLink:
    """What a valid unsubscribe token names; LinkError otherwise."""
    data = _verified(secret, UNSUBSCRIBE, token, "unsubscribe link")
    try:
        person, digest, schedule_id = data.get("u"), data["a"], data.get("s")
    except (TypeError, KeyError, AttributeError):
        raise LinkError("malformed unsubscribe link") from None
    if not (isinstance(person, str) or (person is None and schedule_id is not None)):
        raise LinkError("malformed unsubscribe link")
    if not isinstance(digest, str):
        raise LinkError("malformed unsubscribe link")
    if schedule_id is not None and (type(schedule_id) is not int or schedule_id < 1):
        raise LinkError("malformed unsubscribe link")
    return UnsubscribeLink(person, digest, schedule_id)


def address_digest(address: str) -> str:
    """Which address an unsubscribe link was sent to, without naming it in the link."""
    return hashlib.sha256(address.strip().lower().encode()).hexdigest()[:16]


def _signed(secret: bytes, purpose: bytes, data: dict[str, object]) -> str:
    body = json.dumps(data, separators=(",", ":")).encode()
    mac = hmac.new(secret, purpose + body, hashlib.sha256).digest()
    return _b64(body) + "." + _b64(mac)


def _verified(secret: bytes, purpose: bytes, token: str, what: str) -> Any:
    """The JSON a token signed for `purpose` carries; LinkError naming `what` otherwise."""
    try:
        body_text, mac_text = token.split(".", 1)
        body, mac = _unb64(body_text), _unb64(mac_text)
    except (ValueError, UnicodeError):
        raise LinkError(f"malformed {what}") from None
    if not hmac.compare_digest(mac, hmac.new(secret, purpose + body, hashlib.sha256).digest()):
        raise LinkError(f"{what} signature does not match")
    try:
        return json.loads(body)
    except ValueError:
        raise LinkError(f"malformed {what}") from None


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
