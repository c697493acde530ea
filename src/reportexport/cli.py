"""The `reportexport` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from reportexport import gate, generated
from reportexport.graph import GRAPH_ENV, InvalidGraphError, load_graph
from reportexport.render import RENDERERS


def _graph_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--graph", metavar="FILE", help=f"the fixture to use (default: ${GRAPH_ENV})")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="reportexport", description=__doc__)
    commands = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    graph_cmd = commands.add_parser("graph", help="render the lifecycle from the fixture")
    _graph_option(graph_cmd)
    graph_cmd.add_argument("--format", choices=sorted(RENDERERS), default="table")
    graph_cmd.set_defaults(handler=cmd_graph)

    gate_cmd = commands.add_parser("gate", help="fail when anything drifts from the fixture")
    gate.add_arguments(gate_cmd)
    gate_cmd.set_defaults(handler=gate.run)

    generate_cmd = commands.add_parser(
        "generate", help="rewrite the files and README regions generated from the fixture"
    )
    _graph_option(generate_cmd)
    generate_cmd.add_argument("--root", default=".", help="repository root")
    generate_cmd.set_defaults(handler=cmd_generate)
    return p


def cmd_graph(args: argparse.Namespace) -> int:
    sys.stdout.write(RENDERERS[args.format](load_graph(args.graph)))
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    root = Path(args.root)
    graph = load_graph(args.graph or gate.resolve_fixture(root, None))
    for path in dict.fromkeys(generated.write(graph, root)):
        print(f"wrote {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except InvalidGraphError as exc:
        print(f"reportexport: {exc.source}: invalid job status graph:", file=sys.stderr)
        for defect in exc.defects:
            print(f"  - {defect}", file=sys.stderr)
        return 2
