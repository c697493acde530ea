"""Text that may reach the store: valid Unicode that encodes as UTF-8, without NUL.

A lone surrogate (`"\\ud800"` is a valid JSON escape; Python's surrogateescape turns an invalid
UTF-8 byte of a command-line argument into one) cannot be encoded, so a row holding it poisons
every response that serialises it; PostgreSQL's `jsonb` refuses NUL while SQLite keeps it.
Both are refused at the door, and anything quoted back in a message is made printable first.
"""

from __future__ import annotations

import re

# What `unsafe_text` accepts, as patterns for the OpenAPI document. Both mean the same in
# ECMA-262 (strings of UTF-16 code units, where an emoji is a surrogate pair) and in Python
# (strings of code points, where JSON's "\\ud83d\\ude00" is one emoji): no NUL, no lone surrogate.
NO_NUL_PATTERN = "^[^\\u0000]*$"
STORABLE_PATTERN = "^(?:[^\\u0000\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])*$"
# Both, for a schema's `allOf`: a validator whose regex engine cannot compile a surrogate escape
# (Rust's, in jsonschema-rs and so in schemathesis) drops the second and keeps the first.
STORABLE_PATTERNS = (NO_NUL_PATTERN, STORABLE_PATTERN)


def unsafe_text(value: str) -> str | None:
    """Why `value` cannot be stored as text, or None when it can."""
    if "\x00" in value:
        return f"contains a NUL character (U+0000) at position {value.index(chr(0))}"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(value[exc.start])
        if 0xDC80 <= code <= 0xDCFF:  # how Python carries an undecodable byte of argv
            return f"is not valid UTF-8 (byte 0x{code - 0xDC00:02x} at position {exc.start})"
        return f"contains a lone surrogate (U+{code:04X}) at position {exc.start}"
    return None


def printable(value: str) -> str:
    """`value` with anything that cannot be encoded as UTF-8 written as an escape."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


_SURROGATE = re.compile("[\ud800-\udfff]")


def displayable(value: str) -> str:
    """`value` as a page shows it: each lone surrogate (an undecodable byte, kept so it is
    refused by name) as U+FFFD, as a browser shows bytes that are not UTF-8."""
    return _SURROGATE.sub("\ufffd", value)


def quoted(value: str, limit: int = 80) -> str:
    """`value` quoted for a one-line message: escapes for anything unprintable, cut at `limit`
    characters (a 100 kB parameter does not make a 100 kB error)."""
    if len(value) <= limit:
        return repr(value)
    return repr(value[:limit]) + f"... ({len(value):,} characters)"
