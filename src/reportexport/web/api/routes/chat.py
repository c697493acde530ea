"""Chat channels: operators register, list and remove them."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from reportexport.web.api.models import ChatChannelIn, ChatChannelOut, problems
from reportexport.web.deps import ChannelIdIn, CurrentUser, Parts
from reportexport.web.problems import require_json

router = APIRouter(responses=problems(405, 503))  # a wrong method; an outage


CHANNEL_LINKS = {
    "RemoveChatChannel": {
        "operationId": "remove_chat_channel",
        "parameters": {"channel_id": "$response.body#/id"},
    },
    "ListChatChannels": {"operationId": "list_chat_channels"},
    "AuditOfChatChannel": {
        "operationId": "list_audit",
        "parameters": {"object_kind": "chat_channel", "object_id": "$response.body#/id"},
    },
}


@router.post(
    "/api/chat-channels",
    response_model=ChatChannelOut,
    status_code=201,
    tags=["chat"],
    operation_id="add_chat_channel",
    dependencies=[Depends(require_json)],
    responses={
        201: {"description": "The channel (its URL is not shown again)", "links": CHANNEL_LINKS},
        **problems(400, 401, 403, 404, 415, 422),
    },
)
def add_chat_channel(body: ChatChannelIn, parts: Parts, user: CurrentUser) -> ChatChannelOut:
    """Operators: a chat channel that gets one person's announcements (`owner`), or everyone's
    (`owner` null), from now on: each export that ends posts it one message. With
    `schedules_only`, it gets those of the schedules it is added to alone (PUT
    /api/schedules/{id}/channels/{channel_id}: by `owner`, or an operator)."""
    channel = parts.chat.add(
        user, body.url, body.name, owner=body.owner, schedules_only=body.schedules_only
    )
    return ChatChannelOut.of(channel)


@router.get(
    "/api/chat-channels",
    response_model=list[ChatChannelOut],
    tags=["chat"],
    operation_id="list_chat_channels",
    responses=problems(401, 403),
)
def list_chat_channels(parts: Parts, user: CurrentUser) -> list[ChatChannelOut]:
    """Operators: every chat channel, removed ones too (without their URLs)."""
    return [ChatChannelOut.of(c) for c in parts.chat.list(user)]


@router.delete(
    "/api/chat-channels/{channel_id}",
    status_code=204,
    tags=["chat"],
    operation_id="remove_chat_channel",
    responses=problems(401, 403, 404, 422),
)
def remove_chat_channel(channel_id: ChannelIdIn, parts: Parts, user: CurrentUser) -> Response:
    """Operators: stop sending to a channel (an announcement waiting for it is no longer held
    open by it)."""
    parts.chat.remove(user, channel_id)
    return Response(status_code=204)
