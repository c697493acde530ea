"""Text that may be stored: what is refused and why, and how text is quoted back in messages."""

from __future__ import annotations

import pytest

from reportexport.core.text import printable, quoted, unsafe_text


@pytest.mark.parametrize("value", ["", "plain", "é ✓ 𝄞", "\ud7ff", "\ue000", "tab\tnew\nline"])
def test_valid_unicode_without_nul_may_be_stored(value: str) -> None:
    assert unsafe_text(value) is None


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("\x00", "contains a NUL character (U+0000) at position 0"),
        ("ab\x00c\x00", "contains a NUL character (U+0000) at position 2"),
        ("x\ud800", "contains a lone surrogate (U+D800) at position 1"),
        ("\udfff", "contains a lone surrogate (U+DFFF) at position 0"),
        ("\udc7f", "contains a lone surrogate (U+DC7F) at position 0"),
        ("ab\udc80", "is not valid UTF-8 (byte 0x80 at position 2)"),
        ("\udcff", "is not valid UTF-8 (byte 0xff at position 0)"),
        ("\udd00", "contains a lone surrogate (U+DD00) at position 0"),
    ],
)
def test_text_that_cannot_be_stored_says_why_and_where(value: str, why: str) -> None:
    assert unsafe_text(value) == why


def test_an_undecodable_argument_byte_is_named_as_a_byte() -> None:
    argument = b"caf\xe9".decode("utf-8", "surrogateescape")
    assert unsafe_text(argument) == "is not valid UTF-8 (byte 0xe9 at position 3)"


def test_printable_escapes_what_utf8_cannot_carry_and_keeps_the_rest() -> None:
    assert printable("é\ud800x") == "é\\ud800x"
    assert printable("plain ✓") == "plain ✓"
    printable("\udcff").encode("utf-8")


@pytest.mark.parametrize(
    ("value", "limit", "text"),
    [
        ("abc", 80, "'abc'"),
        ("x" * 80, 80, repr("x" * 80)),
        ("x" * 81, 80, repr("x" * 80) + "... (81 characters)"),
        ("y" * 12_345, 3, "'yyy'... (12,345 characters)"),
        ("ab\n", 3, "'ab\\n'"),
    ],
)
def test_quoted_cuts_long_text_and_says_how_long_it_was(value: str, limit: int, text: str) -> None:
    assert quoted(value, limit) == text


def test_quoted_cuts_at_80_characters_by_default() -> None:
    assert quoted("z" * 80) == repr("z" * 80)
    assert quoted("z" * 81) == repr("z" * 80) + "... (81 characters)"
