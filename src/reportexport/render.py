"""Render a job status graph as the case study's decision table and as diagrams.

Pure functions of the graph alone; the README's generated regions and
`reportexport graph` both come from here.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from reportexport.graph import Edge, Graph

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


RENDERERS: dict[str, Callable[[Graph], str]] = {
    "table": render_table,
    "mermaid": render_mermaid,
    "dot": render_dot,
    "json": render_json,
}
