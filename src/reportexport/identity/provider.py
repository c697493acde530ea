"""An OpenID Connect provider, as a relying party speaks to it: discovery, the authorization
code flow with PKCE (S256) and a nonce, the refresh grant, and the ID token checked against the
provider's keys (signature, issuer, audience, expiry, nonce).

Authlib makes the request's parts (state, nonce, the PKCE verifier and its S256 challenge, the
authorization URL); the token and userinfo requests are plain form and bearer requests over
httpx; joserfc checks the ID token. A provider that
does not answer, or answers what cannot be trusted, is a `ProviderError`; one that refuses the
person (they denied, were disabled, or their grant was revoked) a `ProviderRefusedError`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from authlib.common.security import generate_token
from authlib.common.urls import add_params_to_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from pydantic import BaseModel, ConfigDict, ValidationError

SCOPES = "openid profile email"
DISCOVERY_SECONDS = 300.0  # the provider's configuration and keys are read again after this
LEEWAY_SECONDS = 60  # clocks of this machine and the provider's may differ this much
TIMEOUT_SECONDS = 10.0


class ProviderError(Exception):
    """The identity provider could not be asked, or its answer cannot be trusted."""


class ProviderRefusedError(ProviderError):
    """The identity provider refused the person; `code` is its OAuth error code
    (`access_denied`, `invalid_grant`)."""

    def __init__(self, code: str, description: str = "") -> None:
        super().__init__(f"{code}: {description}" if description else code)
        self.code = code


@dataclass(frozen=True, kw_only=True)
class ProviderSettings:
    issuer: str
    client_id: str
    client_secret: str
    redirect_uri: str


@dataclass(frozen=True, kw_only=True)
class Started:
    """Where to send the browser, and what the callback must find again."""

    url: str
    state: str
    nonce: str
    code_verifier: str


@dataclass(frozen=True, kw_only=True)
class Identity:
    """Who the provider says the person is now: their claims (the ID token's, then the
    userinfo's), and the refresh token that lets us ask again."""

    subject: str
    claims: Mapping[str, Any]
    refresh_token: str | None


class TokenAnswer(BaseModel):
    """A token endpoint's answer (RFC 6749 5.1, 5.2; OpenID Connect's `id_token`)."""

    model_config = ConfigDict(extra="ignore")

    access_token: str | None = None
    id_token: str | None = None
    refresh_token: str | None = None
    error: str | None = None
    error_description: str | None = None


class OpenIDProvider:
    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._configuration: dict[str, Any] | None = None
        self._keys: KeySet | None = None
        self._read_at = 0.0

    def start(self) -> Started:
        """A new authorization request: its URL, and the state, nonce and PKCE verifier."""
        configuration = self._discovered()
        settings = self.settings
        state, nonce, verifier = generate_token(32), generate_token(32), generate_token(64)
        url = add_params_to_uri(
            configuration["authorization_endpoint"],
            [
                ("response_type", "code"),
                ("client_id", settings.client_id),
                ("redirect_uri", settings.redirect_uri),
                ("scope", SCOPES),
                ("state", state),
                ("nonce", nonce),
                ("code_challenge", create_s256_code_challenge(verifier)),
                ("code_challenge_method", "S256"),
            ],
        )
        return Started(url=url, state=state, nonce=nonce, code_verifier=verifier)

    def finish(self, *, code: str, code_verifier: str, nonce: str) -> Identity:
        """The identity the authorization code stands for."""
        token = self._token(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": self.settings.redirect_uri,
                "code_verifier": code_verifier,
            }
        )
        return self._identity(token, nonce=nonce)

    def refresh(self, refresh_token: str) -> Identity:
        """The identity as the provider sees it now (ProviderRefusedError when it no longer
        lets the person in)."""
        token = self._token({"grant_type": "refresh_token", "refresh_token": refresh_token})
        identity = self._identity(token, nonce=None)
        if identity.refresh_token is None:  # the provider keeps the same one
            return Identity(
                subject=identity.subject, claims=identity.claims, refresh_token=refresh_token
            )
        return identity

    # -- the exchanges ---------------------------------------------------------------------------

    def _token(self, form: dict[str, str]) -> Mapping[str, Any]:
        """A token endpoint's answer to `form` (the client authenticated with HTTP Basic)."""
        settings = self.settings
        endpoint = self._discovered()["token_endpoint"]
        try:
            with httpx.Client(timeout=TIMEOUT_SECONDS) as http:
                answer = http.post(
                    endpoint, data=form, auth=(settings.client_id, settings.client_secret),
                    headers={"Accept": "application/json"},
                )  # fmt: skip
            body = TokenAnswer.model_validate_json(answer.content)
        except (httpx.HTTPError, ValidationError) as exc:
            raise ProviderError(f"the provider's token endpoint did not answer: {exc}") from None
        if answer.status_code in (400, 401) and body.error:
            raise ProviderRefusedError(body.error, body.error_description or "")
        if answer.status_code != 200 or not body.access_token:
            raise ProviderError(f"the provider's token endpoint answered {answer.status_code}")
        return body.model_dump()

    def _identity(self, token: Mapping[str, Any], *, nonce: str | None) -> Identity:
        claims: dict[str, Any] = {}
        if token.get("id_token"):
            claims = self._checked_id_token(str(token["id_token"]), nonce=nonce)
        elif nonce is not None:
            raise ProviderError("the provider's answer holds no ID token")
        endpoint = self._discovered().get("userinfo_endpoint")
        if endpoint:
            bearer = {"Authorization": f"Bearer {token['access_token']}"}
            try:
                with httpx.Client(timeout=TIMEOUT_SECONDS) as http:
                    answer = http.get(endpoint, headers=bearer)
                answer.raise_for_status()
                info = answer.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise ProviderError(f"the provider's userinfo did not answer: {exc}") from None
            if not isinstance(info, dict):
                raise ProviderError("the provider's userinfo is not an object")
            if claims and info.get("sub") != claims.get("sub"):
                raise ProviderError("the provider's userinfo names another subject")
            claims = {**claims, **info}
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise ProviderError("the provider named no subject")
        refresh = token.get("refresh_token")
        return Identity(
            subject=subject, claims=claims, refresh_token=str(refresh) if refresh else None
        )

    def _checked_id_token(self, id_token: str, *, nonce: str | None) -> dict[str, Any]:
        settings = self.settings
        try:
            decoded = jwt.decode(id_token, self._key_set())
            wanted: dict[str, Any] = {
                "iss": {"essential": True, "value": self._discovered()["issuer"]},
                "aud": {"essential": True, "value": settings.client_id},
                "exp": {"essential": True},
                "sub": {"essential": True},
            }
            if nonce is not None:
                wanted["nonce"] = {"essential": True, "value": nonce}
            jwt.JWTClaimsRegistry(leeway=LEEWAY_SECONDS, **wanted).validate(decoded.claims)
        except (JoseError, ValueError) as exc:
            raise ProviderError(f"the provider's ID token cannot be trusted: {exc}") from None
        return dict(decoded.claims)

    # -- discovery -------------------------------------------------------------------------------

    def _discovered(self) -> dict[str, Any]:
        with self._lock:
            if self._configuration is None or time.monotonic() - self._read_at > DISCOVERY_SECONDS:
                self._configuration, self._keys = self._discover()
                self._read_at = time.monotonic()
            return self._configuration

    def _key_set(self) -> KeySet:
        self._discovered()
        assert self._keys is not None
        return self._keys

    def _discover(self) -> tuple[dict[str, Any], KeySet]:
        issuer = self.settings.issuer.rstrip("/")
        try:
            with httpx.Client(timeout=TIMEOUT_SECONDS) as http:
                answer = http.get(f"{issuer}/.well-known/openid-configuration")
                answer.raise_for_status()
                configuration = answer.json()
                keys = http.get(configuration["jwks_uri"])
                keys.raise_for_status()
                key_set = KeySet.import_key_set(keys.json())
        except (httpx.HTTPError, ValueError, KeyError, TypeError, JoseError) as exc:
            raise ProviderError(
                f"the identity provider at {issuer} did not answer: {exc}"
            ) from None
        if configuration.get("issuer", "").rstrip("/") != issuer:
            raise ProviderError(
                f"the identity provider at {issuer} says it is {configuration.get('issuer')!r}"
            )
        for endpoint in ("authorization_endpoint", "token_endpoint"):
            if not isinstance(configuration.get(endpoint), str):
                raise ProviderError(f"the identity provider's configuration lacks {endpoint}")
        return configuration, key_set
