"""Every generated page of docs/reference/, rendered in memory, and the means to write or check
them."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tools.docs import exporter
from tools.docs.openapi_page import http_api_page
from tools.docs.pages import cli_page, lifecycle_page, lifecycle_svg, metrics_page, settings_page

REPO_ROOT = Path(__file__).resolve().parents[2]
REFERENCE = "docs/reference"


def pages() -> dict[str, str]:
    """Each generated file's path from the repository root, and its text."""
    graph = exporter.load_graph(exporter.packaged_fixture_path())
    return {
        f"{REFERENCE}/settings.md": settings_page(),
        f"{REFERENCE}/cli.md": cli_page(),
        f"{REFERENCE}/http-api.md": http_api_page(openapi_document()),
        f"{REFERENCE}/metrics.md": metrics_page(graph),
        f"{REFERENCE}/lifecycle.md": lifecycle_page(graph),
        f"{REFERENCE}/lifecycle.svg": lifecycle_svg(graph),
    }


def openapi_document() -> Mapping[str, Any]:
    """The app's OpenAPI document, as a service with the demo catalog and default settings
    serves it (a throwaway home: nothing of the checkout is read or written)."""
    with tempfile.TemporaryDirectory(prefix="reportexport-docs-") as folder:
        home = Path(folder)
        exporter.write_demo_catalog(home / "catalog.toml")
        settings = exporter.composition.load_settings(environ={"REPORTEXPORT_HOME": str(home)})
        with exporter.composition.running(settings, builds_store=True) as runtime:
            return runtime.app().openapi()


def write_pages(root: Path) -> list[str]:
    """Write every page that differs; the paths written."""
    written = []
    for path, text in pages().items():
        target = root / path
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def stale_pages(root: Path) -> list[str]:
    """The generated pages whose committed text differs from what the code generates now."""
    return [
        path
        for path, text in pages().items()
        if not (root / path).is_file() or (root / path).read_text(encoding="utf-8") != text
    ]
