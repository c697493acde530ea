"""Standard Webhooks signatures: `webhook-id`, `webhook-timestamp`, `webhook-signature`.

During a secret rotation both secrets sign, space-separated, so receivers on either verify.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from datetime import datetime

from standardwebhooks import Webhook

PREFIX = "whsec_"


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def signed_headers(
    secrets_in_use: Sequence[str], message_id: str, timestamp: datetime, body: str
) -> dict[str, str]:
    signatures = " ".join(
        Webhook(secret).sign(message_id, timestamp, body) for secret in secrets_in_use
    )
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": signatures,
        "content-type": "application/json",
    }
