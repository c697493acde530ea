"""What the services refuse, named for what happened; every entry point translates these.

    ServiceError
    ├── NotFoundError        no such thing, or not yours to see            (HTTP 404)
    ├── ForbiddenError       yours to see, not yours to do                 (HTTP 403)
    │   └── AccessRefusedError  an access rule or a bound attribute refused (`access_rule`)
    ├── InvalidInputError    a field breaks a rule; `field` and `rule` say  (HTTP 422)
    ├── ConflictError        not possible in the thing's present state      (HTTP 409)
    │   └── KeyReusedError   an Idempotency-Key that named another request  (`earlier`)
    ├── GoneError            it existed and is gone (an expired file)       (HTTP 410)
    └── OverLimitError       a fairness limit; `limit`, `retry_after`       (HTTP 429)

A `ParameterError` (a saved query's parameter) and a `TransitionError` (a move the graph does not
allow) come from the pure core and reach entry points as they are.
"""

from __future__ import annotations


class ServiceError(Exception):
    """Base of the services' refusals; `title` is a short phrase, str() the detail."""

    title = "Refused"

    def __init__(self, detail: str, *, title: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        if title is not None:
            self.title = title


class NotFoundError(ServiceError, LookupError):
    title = "Not found"


class ForbiddenError(ServiceError):
    title = "Forbidden"


class AccessRefusedError(ForbiddenError):
    """A saved query's access rule does not include the person, or a parameter is bound to an
    attribute they lack; `access_rule` names it (`queries.payroll.access`, or
    `parameters.country.bind`)."""

    title = "Access refused"

    def __init__(self, detail: str, *, access_rule: str) -> None:
        super().__init__(detail)
        self.access_rule = access_rule


class InvalidInputError(ServiceError, ValueError):
    title = "Invalid request"

    def __init__(self, field: str, rule: str, detail: str, *, title: str | None = None) -> None:
        super().__init__(detail, title=title)
        self.field = field
        self.rule = rule


class ConflictError(ServiceError):
    title = "Conflict"


class KeyReusedError(ConflictError):
    """An Idempotency-Key sent again with another request; `earlier` is what it made (an
    export, or a schedule: `made`), `gone` when that was deleted since."""

    title = "Idempotency key reused"
    field = "Idempotency-Key"

    def __init__(self, earlier: int, *, made: str = "export", gone: bool = False) -> None:
        super().__init__(
            f"this Idempotency-Key named {made} {earlier}, which was deleted since"
            if gone
            else f"this Idempotency-Key already names {made} {earlier}, a different request"
        )
        self.earlier = earlier
        self.made = made
        self.gone = gone


class GoneError(ServiceError):
    title = "Gone"


class OverLimitError(ServiceError):
    title = "Too many exports"

    def __init__(self, detail: str, *, limit: str, retry_after: int) -> None:
        super().__init__(detail)
        self.limit = limit
        self.retry_after = retry_after
