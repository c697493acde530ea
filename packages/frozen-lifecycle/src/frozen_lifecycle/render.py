"""Render a job status graph as the case study's decision table and as diagrams.

Pure functions of the graph alone; the README's generated regions and
`frozen-lifecycle graph` both come from here.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from frozen_lifecycle.graph import Edge, Graph

TABLE_HEADER = ("Current status", "Event", "Next status", "Actor", "Side effect")


def decision_rows(graph: Graph) -> list[tuple[str, str, str, str, str]]:
    """One row per edge, then a `reject` row for any retry on each terminal state."""
    rows = [
        (edge.from_status, _event(graph, edge), edge.to_status, edge.actor, _effects(graph, edge))
        for edge in graph.transitions
    ]
    rows += [(state, "any retry", "reject", "—", "none") for state in graph.terminal]
    return rows


def _event(graph: Graph, edge: Edge) -> str:
    if edge.from_status == graph.initial and not graph.is_terminal(edge.to_status):
        return f"{edge.actor} claims the job"
    return f"{edge.actor} moves the job to {edge.to_status}"


def _effects(graph: Graph, edge: Edge) -> str:
    return ", ".join(graph.side_effects.get(edge.to_status, ())) or "none"


def render_table(graph: Graph) -> str:
    lines = [_table_line(TABLE_HEADER), _table_line(("---",) * len(TABLE_HEADER))]
    lines += [_table_line(row) for row in decision_rows(graph)]
    return "\n".join(lines) + "\n"


def _table_line(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(cells) + " |"


def render_mermaid(graph: Graph) -> str:
    lines = ["stateDiagram-v2", f"    [*] --> {graph.initial}"]
    lines += [f"    {e.from_status} --> {e.to_status}: {e.actor}" for e in graph.transitions]
    for state in graph.terminal:
        effects = graph.side_effects.get(state, ())
        if effects:
            lines.append(f"    note right of {state}: {', '.join(effects)}")
        lines.append(f"    {state} --> [*]")
    return "\n".join(lines) + "\n"


def render_dot(graph: Graph) -> str:
    lines = [f'digraph "{graph.job_type}" {{', "    rankdir=LR;", "    node [shape=box];"]
    for state in graph.states:
        shape = "doublecircle" if graph.is_terminal(state) else "box"
        effects = graph.side_effects.get(state, ())
        label = state + "".join(f"\\n{effect}" for effect in effects)
        lines.append(f'    "{state}" [shape={shape}, label="{label}"];')
    lines += [
        f'    "{e.from_status}" -> "{e.to_status}" [label="{e.actor}"];' for e in graph.transitions
    ]
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_json(graph: Graph) -> str:
    body = {"fingerprint": graph.fingerprint, "graph": graph.document}
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def render_svg(graph: Graph) -> str:
    """A plain SVG drawing of the graph: states in columns by distance from the initial state."""
    depth = {graph.initial: 0}
    frontier = [graph.initial]
    while frontier:
        nxt = []
        for state in frontier:
            for edge in graph.transitions:
                if edge.from_status == state and edge.to_status not in depth:
                    depth[edge.to_status] = depth[state] + 1
                    nxt.append(edge.to_status)
        frontier = nxt
    columns: dict[int, list[str]] = {}
    for state in graph.states:
        columns.setdefault(depth.get(state, 0), []).append(state)
    place = {
        state: (40 + column * 220, 40 + row * 80)
        for column, states in columns.items()
        for row, state in enumerate(states)
    }
    width = 40 + 220 * len(columns) + 40
    height = 40 + 80 * max(len(v) for v in columns.values()) + 20
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="job lifecycle" font-family="sans-serif" font-size="13">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" '
        'markerHeight="8" orient="auto"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>',
    ]
    for edge in graph.transitions:
        (x1, y1), (x2, y2) = place[edge.from_status], place[edge.to_status]
        if x2 > x1:  # forward: right edge to left edge
            ax, ay, bx, by = x1 + 130, y1 + 18, x2, y2 + 18
        else:  # back or down a column: bottom of the source to the top of the target
            ax, ay, bx, by = x1 + 65, y1 + 36, x2 + 95, y2
        parts.append(
            f'<line x1="{ax}" y1="{ay}" x2="{bx}" y2="{by}" stroke="#333" '
            f'marker-end="url(#arrow)"/>'
            f'<text x="{(ax + bx) / 2 + 4}" y="{(ay + by) / 2 - 4}" fill="#555">'
            f"{edge.actor}</text>"
        )
    for state, (x, y) in place.items():
        border = 3 if graph.is_terminal(state) else 1
        parts.append(
            f'<g data-state="{state}"><rect x="{x}" y="{y}" width="130" height="36" rx="6" '
            f'fill="#f8f8f8" stroke="#333" stroke-width="{border}"/>'
            f'<text x="{x + 65}" y="{y + 23}" text-anchor="middle">{state}</text></g>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


RENDERERS: dict[str, Callable[[Graph], str]] = {
    "table": render_table,
    "mermaid": render_mermaid,
    "dot": render_dot,
    "json": render_json,
    "svg": render_svg,
}
