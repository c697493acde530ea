"""The `frozen-lifecycle` command: the frozen job status graph in any repository.

`gate` fails when anything drifts from the fixture, `graph` draws it, `sql` prints its database
guards, `init` writes the case study's starting point into a repository and `generate` rewrites
what is generated from the fixture. Every command takes the fixture from `--graph`, else the
configuration's `graph`, else `$FROZEN_LIFECYCLE_GRAPH`, else contracts/job-status-graph.json
under the root, and imports nothing but the standard library. `add_commands` lends the same
commands to another program's parser (`reportexport gate`, `graph` and `generate` are these).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from frozen_lifecycle import __version__, gate, generated
from frozen_lifecycle.gate.config import Config, ConfigError, load_config
from frozen_lifecycle.graph import DEFAULT_FIXTURE, GRAPH_ENV, Graph, InvalidGraphError, load_graph
from frozen_lifecycle.init import (
    DEFAULT_INSTALL,
    INSTALLS,
    LANGUAGES,
    InitError,
    Layout,
    init,
    next_steps,
)
from frozen_lifecycle.provenance import Provenance
from frozen_lifecycle.render import RENDERERS
from frozen_lifecycle.sql import DIALECTS, guards_sql, tables_sql
from frozen_lifecycle.typed_names import render_typed_names

EXIT_USAGE = 2
COMMANDS = ("gate", "graph", "sql", "init", "generate")


def build_parser(prog: str = "frozen-lifecycle") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_commands(commands, names=COMMANDS)
    return p


def add_commands(
    commands: Any,
    *,
    graph_envs: Sequence[str] = (GRAPH_ENV,),
    graph_fallback: Path | None = None,
    names: Sequence[str] = ("gate", "graph", "sql", "init", "generate"),
) -> None:
    """Add the toolkit's commands (those of `names`) to a sub-parser action; each sets
    `toolkit`, the function that runs it."""
    options: dict[str, Any] = {"graph_envs": tuple(graph_envs), "graph_fallback": graph_fallback}
    if "gate" in names:
        gate_cmd = commands.add_parser("gate", help="fail when anything drifts from the fixture")
        gate.add_arguments(gate_cmd, **options)
        gate_cmd.set_defaults(toolkit=gate.run)
    if "graph" in names:
        graph_cmd = commands.add_parser("graph", help="render the lifecycle from the fixture")
        _graph_options(graph_cmd, options)
        graph_cmd.add_argument("--format", choices=sorted(RENDERERS), default="table")
        graph_cmd.set_defaults(toolkit=cmd_graph)
    if "sql" in names:
        sql_cmd = commands.add_parser(
            "sql", help="print the database guards of the fixture, for a migration of your own"
        )
        _graph_options(sql_cmd, options)
        sql_cmd.add_argument("--dialect", required=True, choices=DIALECTS)
        sql_cmd.add_argument(
            "--notify-channel",
            metavar="NAME",
            help="PostgreSQL: NOTIFY this channel of each change no worker made "
            "(default: the configuration's notify-channel, else none)",
        )
        sql_cmd.add_argument(
            "--tables",
            action="store_true",
            help="print instead the smallest tables the guards work on, to start from",
        )
        sql_cmd.set_defaults(toolkit=cmd_sql)
    if "init" in names:
        init_cmd = commands.add_parser(
            "init",
            help="write the starter fixture, the case study's contract tests and a CI workflow",
        )
        init_cmd.add_argument("--root", default=".", help="repository root (default: here)")
        init_cmd.add_argument("--language", required=True, choices=LANGUAGES)
        init_cmd.add_argument(
            "--fixture", default=DEFAULT_FIXTURE, metavar="PATH", help="the fixture's path"
        )
        init_cmd.add_argument(
            "--module",
            metavar="PATH",
            help="the module under contract (default: src/job-status.js, src/job_status.py; "
            "in Python a dotted name imports an installed module instead)",
        )
        init_cmd.add_argument("--tests", metavar="PATH", help="where the contract tests go")
        init_cmd.add_argument(
            "--from",
            dest="draft_from",
            metavar="PATH:NAME",
            help="draft the fixture's states from what holds them: a Python enum or Literal "
            "(jobs.py:Status), a SQL enum type or a table's CHECK (schema.sql:jobs); its edges "
            "are yours to write",
        )
        init_cmd.add_argument(
            "--install",
            choices=INSTALLS,
            default=DEFAULT_INSTALL,
            help="how CI and the hook get the toolkit: a copy in the repository (path, the "
            f"default until it is published) or the package index (default: {DEFAULT_INSTALL})",
        )
        init_cmd.add_argument(
            "--force", action="store_true", help="overwrite the tests and the workflow"
        )
        init_cmd.set_defaults(toolkit=cmd_init)
    if "generate" in names:
        generate_cmd = commands.add_parser(
            "generate", help="rewrite the files and README regions generated from the fixture"
        )
        _graph_options(generate_cmd, options)
        generate_cmd.add_argument(
            "--typed-names",
            metavar="PATH",
            help="write only the typed names (Status, Actor, Effect...) to PATH under the root",
        )
        generate_cmd.set_defaults(toolkit=cmd_generate)


def _graph_options(p: argparse.ArgumentParser, options: dict[str, Any]) -> None:
    p.set_defaults(**options)
    envs = options["graph_envs"]
    p.add_argument(
        "--graph",
        metavar="FILE",
        help=f"the fixture (default: the config's graph, ${envs[0]}, else {DEFAULT_FIXTURE})",
    )
    p.add_argument("--root", default=".", help="repository root (default: the current directory)")


def _config(args: argparse.Namespace) -> Config:
    return load_config(Path(args.root))


def _graph(args: argparse.Namespace, config: Config) -> Graph:
    return load_graph(gate.fixture_of(args, Path(args.root), config))


def cmd_graph(args: argparse.Namespace) -> int:
    sys.stdout.write(RENDERERS[args.format](_graph(args, _config(args))))
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    root = Path(args.root)
    config = _config(args)
    graph = _graph(args, config)
    if args.typed_names:
        target = root / args.typed_names
        target.parent.mkdir(parents=True, exist_ok=True)
        text = render_typed_names(graph, provenance=config.targets().provenance)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {args.typed_names}")
        return 0
    artifacts = generated.artifacts(config.targets())
    for path in dict.fromkeys(generated.write(graph, root, artifacts)):
        print(f"wrote {path}")
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    if args.tables:
        sys.stdout.write(tables_sql(args.dialect))
        return 0
    config = _config(args)
    graph = _graph(args, config)
    provenance = Provenance(
        fixture=config.targets().provenance.fixture,
        command=f"frozen-lifecycle sql --dialect {args.dialect}",
    )
    channel = args.notify_channel or config.notify_channel
    sys.stdout.write(guards_sql(graph, args.dialect, provenance=provenance, notify_channel=channel))
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    root = Path(args.root)
    config = load_config(root)
    layout = Layout(
        language=args.language,
        fixture=args.fixture,
        module=args.module,
        tests=args.tests,
        check_transition=config.check_transition,
        create_job=config.create_job,
        draft_from=args.draft_from,
        install=args.install,
    )
    try:
        written = init(root, layout, force=args.force)
    except InitError as exc:
        print(f"frozen-lifecycle init: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for item in written:
        if item.draft:
            print(f"drafted {item.path} from {layout.draft_from}: its states; no edges yet")
        else:
            print(f"kept {item.path} (it exists)" if item.kept else f"wrote {item.path}")
    print("next:")
    fixture_written = any(item.path == layout.fixture and not item.kept for item in written)
    for step in next_steps(root, layout, fixture_written=fixture_written):
        print(f"  {step}")
    return 0


def run(args: argparse.Namespace, prog: str) -> int:
    """Run a parsed toolkit command; a refused fixture or configuration is exit 2, in words."""
    try:
        return int(args.toolkit(args))
    except InvalidGraphError as exc:
        print(f"{prog}: {exc.source}: invalid job status graph:", file=sys.stderr)
        for defect in exc.defects:
            print(f"  - {defect}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except FileNotFoundError as exc:
        print(f"{prog}: no such file: {exc.filename}", file=sys.stderr)
        return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return run(args, f"{parser.prog} {args.command}")
