"""One announcement as a chat message, in Slack's incoming-webhook format.

`{"text": ..., "blocks": [...]}`: Slack shows the blocks (and the text in notifications);
Mattermost and Rocket.Chat, which take the same format, show the text, so it says everything on
its own. The wording is the e-mail's (`mail.message`): the saved query's title, how it ended,
the parameters, the rows and file or the reason, and the link to the job's page.

Every value that came from a person is inert: `&`, `<` and `>` are escaped (Slack's control
sequences, `<!channel>` or `<https://…|label>`, cannot be made of them), an `@` cannot start a
mention (a word joiner follows it), and each value is one line of printable text, cut short.
"""

from __future__ import annotations

from typing import Any

from reportexport.mail.message import Announcement, facts, one_line, outcome

MAX_VALUE = 300  # characters of one value (a title, a parameter, a reason)
MAX_FACTS_TEXT = 2900  # a section block's text is at most 3000 characters
WORD_JOINER = "\u2060"


def inert(text: str, limit: int = MAX_VALUE) -> str:
    """A person's value as chat text: one line, escaped, no mention."""
    flat = one_line(text, limit)
    escaped = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return escaped.replace("@", "@" + WORD_JOINER)


def headline(announcement: Announcement, owner: str) -> str:
    """`Export Orders of one day (alice) is ready.`"""
    return f"Export {inert(announcement.title)} ({inert(owner, 100)}) {outcome(announcement)}."


def chat_message(announcement: Announcement, *, owner: str) -> dict[str, Any]:
    """The message for a channel: Slack's `text` and `blocks`."""
    lines = [f"• {inert(name, 100)}: {inert(value)}" for name, value in facts(announcement)]
    listed = "\n".join(lines)
    if len(listed) > MAX_FACTS_TEXT:
        listed = listed[: MAX_FACTS_TEXT - 1] + "…"
    title = headline(announcement, owner)
    link = announcement.job_url
    text = "\n".join([title, *lines, f"Open it: {link}"])
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": title}},
    ]
    if listed:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": listed}})
    blocks.append(
        {
            "type": "actions",
            "elements": [
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Open the export"},
                    "url": link,
                }
            ],
        }
    )
    return {"text": text, "blocks": blocks}
