"""Where each announcement goes: one delivery record per destination, fixed when the job ended.

The database writes the records with the side-effect rows of `emit_done_webhook` and
`emit_failed_webhook` (migration 0020): the recipients are fixed in the transaction of the
terminal transition. A runner records its attempts under the announcement's claim token; an
operator re-drives one given-up destination, which makes its announcement due again.
"""

from __future__ import annotations

from datetime import datetime

from reportexport.core.lifecycle import Effect
from reportexport.core.records import AuditEntry, Delivery
from reportexport.store.audit import write_entry
from reportexport.store.driver import Driver


class _UnchangedError(Exception):
    """Roll a re-drive back: its announcement was completed already."""


class Deliveries:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.codec = driver.codec

    def effect_deliveries(self, job_id: int, effect: Effect) -> list[Delivery]:
        """The destinations of one announcement, in the order they were fixed."""
        with self.driver.read() as session:
            rows = session.rows("effect_deliveries", {"job_id": job_id, "effect": effect})
        return [self.codec.record(Delivery, row) for row in rows]

    def get_delivery(self, delivery_id: int) -> Delivery | None:
        with self.driver.read() as session:
            row = session.row("get_delivery", {"id": delivery_id})
        return None if row is None else self.codec.record(Delivery, row)

    def job_deliveries(self, job_id: int) -> list[Delivery]:
        with self.driver.read() as session:
            rows = session.rows("job_deliveries", {"job_id": job_id})
        return [self.codec.record(Delivery, row) for row in rows]

    def emails_delivered_since(self, address: str, since: datetime) -> int:
        """How many e-mails were delivered to `address` (in any case) since `since`."""
        params = {"address": address, "since": self.codec.moment(since)}
        with self.driver.read() as session:
            row = session.row("emails_delivered_since", params)
        return 0 if row is None else int(row["delivered"])

    def record_delivery_attempt(
        self,
        token: int,
        delivery_id: int,
        *,
        now: datetime,
        status: int | None,
        problem: str | None,
        delivered: bool,
        next_attempt_at: datetime,
        give_up: bool,
    ) -> bool:
        """One attempt at one destination, under the announcement's claim `token`; False when
        the claim was lost or the destination was delivered or given up already (nothing is
        written then)."""
        moment = self.codec.moment
        params = {
            "id": delivery_id,
            "token": token,
            "now": moment(now),
            "last_status": status,
            "last_error": problem,
            "delivered": delivered,
            "give_up": give_up and not delivered,
            "next_attempt_at": moment(next_attempt_at),
        }
        with self.driver.write() as session:
            return session.row("record_delivery_attempt", params) is not None

    def redrive_delivery(
        self, delivery_id: int, *, now: datetime, audit: AuditEntry | None = None
    ) -> bool:
        """One given-up destination due again, and its announcement with it; False when it was
        not given up, or its announcement was completed. `audit` is recorded with it."""
        moment = self.codec.moment(now)
        try:
            with self.driver.write() as session:
                row = session.row("redrive_delivery", {"id": delivery_id, "now": moment})
                if row is None:
                    return False
                params = {"job_id": row["job_id"], "effect": row["effect"], "now": moment}
                if session.row("reopen_side_effect", params) is None:
                    raise _UnchangedError
                if audit is not None:
                    write_entry(session, audit)
        except _UnchangedError:
            return False
        return True

    def given_up_deliveries(self, limit: int = 100) -> list[Delivery]:
        """Destinations that ran out of attempts or refused for good, most recent first."""
        with self.driver.read() as session:
            rows = session.rows("given_up_deliveries", {"limit": limit})
        return [self.codec.record(Delivery, row) for row in rows]
