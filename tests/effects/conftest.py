"""A real receiver (an HTTP server on loopback), a clock the test moves, and the effects
runner's object store and HTTP client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reportexport.objects import ObjectStore, open_object_store
from tests.effects.receiver import Receiver, running_receiver
from tests.helpers import Clock
from tests.tiers import Tier

TIER = Tier("effects", budget_seconds=300, modules={"test_crashes.py": ("processes",)})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver(Receiver()) as running:
        yield running


@pytest.fixture
def objects(tmp_path: Path) -> ObjectStore:
    return open_object_store(f"file://{tmp_path / 'objects'}", link_secret=b"links")


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5, follow_redirects=False) as client:
        yield client
