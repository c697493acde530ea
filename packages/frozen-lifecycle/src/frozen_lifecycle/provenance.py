"""What generated text says of where it comes from: the fixture, and the command that writes it.

Every generated file names both, so a reader knows what to edit and what to run instead; a
repository that regenerates through its own command (`reportexport generate`) names that one.
"""

from __future__ import annotations

from dataclasses import dataclass

from frozen_lifecycle.graph import DEFAULT_FIXTURE

DEFAULT_COMMAND = "frozen-lifecycle generate"


@dataclass(frozen=True, kw_only=True)
class Provenance:
    fixture: str = DEFAULT_FIXTURE
    command: str = DEFAULT_COMMAND


DEFAULT_PROVENANCE = Provenance()
