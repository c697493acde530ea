"""Webhook endpoints, and the operators' re-drive of a given-up side effect or of one given-up
destination of an announcement."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from reportexport.core.lifecycle import Effect
from reportexport.web.api.models import (
    DeliveryOut,
    WebhookCreated,
    WebhookIn,
    WebhookOut,
    WebhookTestOut,
    problems,
)
from reportexport.web.deps import CurrentUser, DeliveryIdIn, EndpointIdIn, JobIdIn, Parts
from reportexport.web.problems import require_json

router = APIRouter(responses=problems(405, 503))  # a wrong method; an outage


ENDPOINT_LINKS = {
    **{
        name: {"operationId": operation, "parameters": {"endpoint_id": "$response.body#/id"}}
        for name, operation in (
            ("RotateWebhook", "rotate_webhook"),
            ("TestWebhook", "test_webhook"),
            ("RemoveWebhook", "remove_webhook"),
        )
    },
    "ListWebhooks": {"operationId": "list_webhooks"},
    "AuditOfEndpoint": {
        "operationId": "list_audit",
        "parameters": {"object_kind": "webhook_endpoint", "object_id": "$response.body#/id"},
    },
}


@router.post(
    "/api/webhooks",
    response_model=WebhookCreated,
    status_code=201,
    tags=["webhooks"],
    operation_id="add_webhook",
    dependencies=[Depends(require_json)],
    responses={
        201: {"description": "The endpoint and its secret (shown once)", "links": ENDPOINT_LINKS},
        **problems(400, 401, 403, 409, 415, 422),
    },
)
def add_webhook(body: WebhookIn, parts: Parts, user: CurrentUser) -> WebhookCreated:
    endpoint = parts.webhooks.add(user, body.url, everyone=body.everyone)
    return WebhookCreated(**WebhookOut.of(endpoint).model_dump(), secret=endpoint.secret)


@router.get(
    "/api/webhooks",
    response_model=list[WebhookOut],
    tags=["webhooks"],
    operation_id="list_webhooks",
    responses=problems(401),
)
def list_webhooks(parts: Parts, user: CurrentUser) -> list[WebhookOut]:
    return [WebhookOut.of(e) for e in parts.webhooks.list(user)]


@router.post(
    "/api/webhooks/{endpoint_id}/rotate",
    response_model=WebhookCreated,
    tags=["webhooks"],
    operation_id="rotate_webhook",
    responses=problems(401, 404, 422),
)
def rotate_webhook(endpoint_id: EndpointIdIn, parts: Parts, user: CurrentUser) -> WebhookCreated:
    """A new secret; the previous one keeps signing for 24 hours."""
    endpoint = parts.webhooks.rotate(user, endpoint_id)
    return WebhookCreated(**WebhookOut.of(endpoint).model_dump(), secret=endpoint.secret)


@router.delete(
    "/api/webhooks/{endpoint_id}",
    status_code=204,
    tags=["webhooks"],
    operation_id="remove_webhook",
    responses=problems(401, 404, 422),
)
def remove_webhook(endpoint_id: EndpointIdIn, parts: Parts, user: CurrentUser) -> Response:
    parts.webhooks.remove(user, endpoint_id)
    return Response(status_code=204)


@router.post(
    "/api/webhooks/{endpoint_id}/test",
    response_model=WebhookTestOut,
    tags=["webhooks"],
    operation_id="test_webhook",
    responses={
        **problems(401, 404, 422),
        409: {**problems(409)[409], "description": "The endpoint is disabled: no test is sent"},
    },
)
def test_webhook(endpoint_id: EndpointIdIn, parts: Parts, user: CurrentUser) -> WebhookTestOut:
    """Send a signed `webhook.test` event now and say what came back."""
    return WebhookTestOut.of(parts.webhooks.test(user, endpoint_id))


@router.post(
    "/api/side-effects/{job_id}/{effect}/redrive",
    tags=["operators"],
    status_code=204,
    operation_id="redrive_side_effect",
    responses={
        204: {
            "description": "It is due again",
            "links": {
                "AuditOfSideEffect": {
                    "operationId": "list_audit",
                    "parameters": {
                        "object_kind": "side_effect",
                        "object_id": "{$request.path.job_id}/{$request.path.effect}",
                    },
                }
            },
        },
        **problems(401, 403, 404, 409, 422),
    },
)
def redrive_side_effect(
    job_id: JobIdIn, effect: Effect, parts: Parts, user: CurrentUser
) -> Response:
    """Operators: try a given-up side effect again, with a fresh allowance of attempts."""
    parts.exports.redrive(user, job_id, effect)
    return Response(status_code=204)


@router.post(
    "/api/deliveries/{delivery_id}/redrive",
    response_model=DeliveryOut,
    tags=["operators"],
    operation_id="redrive_delivery",
    responses={
        200: {
            "description": "It is due again, alone (its announcement with it)",
            "links": {
                "AuditOfDelivery": {
                    "operationId": "list_audit",
                    "parameters": {"object_kind": "delivery", "object_id": "$response.body#/id"},
                },
                "ExportOfDelivery": {
                    "operationId": "get_export",
                    "parameters": {"job_id": "$response.body#/job_id"},
                },
            },
        },
        **problems(401, 403, 404, 409, 422),
    },
)
def redrive_delivery(delivery_id: DeliveryIdIn, parts: Parts, user: CurrentUser) -> DeliveryOut:
    """Operators: try one given-up destination of an announcement again, with a fresh allowance
    of attempts; the destinations already delivered are not sent it again."""
    return DeliveryOut.of(parts.exports.redrive_delivery(user, delivery_id))
