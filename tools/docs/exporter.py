"""Every name the reference pages take from reportexport, imported in this one place.

The pages describe the program by its public parts: the settings, the command-line parser, the
HTTP application's OpenAPI document, the collector behind /metrics, and the fixture. When a
module moves, the import below is the one line to change.
"""

from __future__ import annotations

from frozen_lifecycle.graph import Graph, load_graph
from frozen_lifecycle.render import render_mermaid, render_svg, render_table
from reportexport import composition
from reportexport.core import settings
from reportexport.core.fixture import packaged_fixture_path
from reportexport.core.records import Heartbeat, MetricsSnapshot, SourceCap
from reportexport.entrypoints.cli import build_parser
from reportexport.entrypoints.demo import write_demo_catalog
from reportexport.web.api.metrics import StoreCollector, metrics_text

__all__ = [
    "Graph",
    "Heartbeat",
    "MetricsSnapshot",
    "SourceCap",
    "StoreCollector",
    "build_parser",
    "composition",
    "load_graph",
    "metrics_text",
    "packaged_fixture_path",
    "render_mermaid",
    "render_svg",
    "render_table",
    "settings",
    "write_demo_catalog",
]
