"""The reference pages: settings, command line, metrics and lifecycle, rendered from the code.

Each `*_page` function returns a page's text; nothing here writes a file (see `tools.docs`).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from tools.docs import exporter
from tools.docs.markdown import NOTICE, code, sentence, table

# -- settings ----------------------------------------------------------------------------------


def settings_page() -> str:
    options = _setting_options(exporter.build_parser())
    rows = []
    for spec in dataclasses.fields(exporter.settings.Settings):
        flags = options.get(spec.name, {})
        rows.append(
            [
                code(spec.name),
                code(exporter.settings.environment_name(spec.name)),
                _default(spec.default),
                _bounds(spec.metadata),
                ", ".join(_option(flag, commands) for flag, commands in flags.items()) or "—",
                sentence(spec.metadata.get("help")),
            ]
        )
    count = len(rows)
    return (
        NOTICE.format(source="`reportexport.core.settings.Settings` and the command-line parser")
        + "\n\n# Settings\n\n"
        f"All {count} settings. Each is read once per process from four layers, each winning over "
        "the next: the command line (the options below), the environment (the variable below), "
        "the TOML file named by `--config FILE` or `$REPORTEXPORT_CONFIG` (the setting's name "
        "as its key), and the default. A wrong name or value stops the command with exit 2, "
        "naming the setting and its layer. See [Configure a deployment]"
        "(../how-to/operators/configure.md) for an example file.\n\n"
        "An empty default means none: `database_url` is then the SQLite file "
        "`reportexport.db` under `home`, `catalog` is `catalog.toml` under `home`, "
        "`objects_url` is `objects/` under `home` (beside the file for another SQLite job "
        "store), and `graph` is the fixture the program was built with.\n\n"
        + table(
            ("setting", "environment", "default", "bounds", "command line", "what"),
            rows,
        )
    )


def _setting_options(parser: argparse.ArgumentParser) -> dict[str, dict[str, list[str]]]:
    """For each setting the command line can give: its option, and the commands that take it."""
    names = {spec.name for spec in dataclasses.fields(exporter.settings.Settings)}
    found: dict[str, dict[str, list[str]]] = {}
    for words, command, _ in _commands(parser):
        for action in command._actions:
            if action.dest in names and action.option_strings:
                flag = action.option_strings[-1]
                found.setdefault(action.dest, {}).setdefault(flag, []).append(" ".join(words))
    return found


def _option(flag: str, commands: list[str]) -> str:
    """An option, with the commands that take it when they are few (`--database` is taken by
    every command that opens the job store: the command-line page lists each one's)."""
    return code(flag) + (f" ({', '.join(commands)})" if len(commands) <= 3 else "")


def _default(value: Any) -> str:
    if value in ("", Path()):
        return "—"
    if isinstance(value, bool):
        return code(str(value).lower())
    if isinstance(value, int | float):
        return code(f"{value:g}" if isinstance(value, float) else str(value))
    return code(str(value))


def _bounds(metadata: Any) -> str:
    low, high = metadata.get("minimum"), metadata.get("maximum")
    if low is None and high is None:
        return ""
    if high is None:
        return f"≥ {low:g}"
    return f"{low:g} to {high:g}" if low is not None else f"≤ {high:g}"


# -- the command line --------------------------------------------------------------------------


def cli_page() -> str:
    parser = exporter.build_parser()
    parts = [
        NOTICE.format(source="`reportexport.entrypoints.cli.build_parser()`"),
        "\n\n# Command line\n\n",
        sentence(parser.description),
        " Every command takes `--config FILE`; options that are settings default to the "
        "environment, the file and the [settings](settings.md)' defaults, in that order. "
        "`reportexport COMMAND --help` prints the same.\n\n",
    ]
    summary = [
        [f"[{code(' '.join(words))}](#{_anchor(words)})", sentence(text)]
        for words, _, text in _commands(parser)
        if words
    ]
    parts.append(table(("command", "what"), summary))
    for words, command, text in _commands(parser):
        if not words:
            continue
        parts.append(f"\n## reportexport {' '.join(words)} {{#{_anchor(words)}}}\n\n")
        parts.append(f"{sentence(text)}\n\n" if text else "")
        parts.append("```text\n" + _usage(words, command) + "\n```\n\n")
        arguments = [
            [_argument(action), sentence(_help(action))]
            for action in command._actions
            if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
        ]
        if arguments:
            parts.append(table(("argument", "what"), arguments))
    return "".join(parts)


def _commands(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    """Every parser below `parser` (itself first), by the words that reach it, with its help."""
    yield words, parser, ""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, sub in action.choices.items():
            for path, found, text in _commands(sub, (*words, name)):
                yield path, found, text or helps.get(name, "")


def _anchor(words: tuple[str, ...]) -> str:
    return "-".join(words)


def _usage(words: tuple[str, ...], command: argparse.ArgumentParser) -> str:
    pieces = ["reportexport", *words]
    for action in command._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            pieces.append("ACTION" if not action.required else "ACTION ...")
            continue
        text = _argument_text(action)
        optional = not action.required or action.nargs in ("*", "?")
        pieces.append(f"[{text}]" if optional else text)
    return " ".join(pieces)


def _argument_text(action: argparse.Action) -> str:
    if not action.option_strings:
        name = str(action.metavar or action.dest)
        return f"{name} ..." if action.nargs in ("*", "+") else name
    flag = action.option_strings[-1]
    if action.nargs == 0:
        return flag
    return f"{flag} {action.metavar or action.dest.upper()}"


def _argument(action: argparse.Action) -> str:
    text = ", ".join(code(flag) for flag in action.option_strings[:-1])
    text = (text + ", " if text else "") + code(_argument_text(action))
    notes = []
    if action.required and action.option_strings:
        notes.append("required")
    if action.choices is not None:
        notes.append("one of " + ", ".join(code(str(choice)) for choice in action.choices))
    if isinstance(action, argparse._AppendAction):
        notes.append("repeatable")
    return text + (f" ({'; '.join(notes)})" if notes else "")


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    shown = action.default not in (None, False, [], argparse.SUPPRESS)
    if shown and "default" not in text:
        text = f"{text} (default: {action.default})" if text else f"default: {action.default}"
    return text


# -- metrics -----------------------------------------------------------------------------------


def metrics_page(graph: exporter.Graph) -> str:
    """What `GET /metrics` exposes, read from the collector the app registers, fed one of
    everything so that every labelled family shows its labels."""
    registry = CollectorRegistry()
    registry.register(
        exporter.StoreCollector(
            _full_snapshot, graph, _one_heartbeat, refusals=lambda: {("show", "group"): 1}
        )
    )
    exposed = exporter.metrics_text(registry).decode()
    rows = []
    for family in text_string_to_metric_families(exposed):
        labels = list(dict.fromkeys(name for s in family.samples for name in s.labels))
        name = family.name + ("_total" if family.type == "counter" else "")
        rows.append(
            [
                code(name),
                family.type,
                ", ".join(code(label) for label in labels) or "—",
                sentence(family.documentation),
            ]
        )
    return (
        NOTICE.format(source="the collector behind `GET /metrics`") + "\n\n# Metrics\n\n"
        "`GET /metrics` answers in Prometheus' text format. Every figure is read from the job "
        "store when it is scraped, so every `serve` process gives the same ones, except "
        "`reportexport_access_refusals_total`: refused access writes nothing to the store, so "
        "each process counts its own (and logs each refusal); a firing refused for access is "
        "counted with the firings, from the store. The values "
        "of `status`, `from_status`, `to_status`, `actor` and `effect` are the fixture's "
        "(see [the lifecycle](lifecycle.md)); a process that stopped cleanly is left out of the "
        "per-process families. [Monitor a deployment](../how-to/operators/monitor.md) has "
        "alert rules over them.\n\n" + table(("metric", "type", "labels", "what"), rows)
    )


def _full_snapshot() -> exporter.MetricsSnapshot:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    cap = exporter.SourceCap(source="demo", max_concurrent=2, set_by="w", set_at=at, running=1)
    return exporter.MetricsSnapshot(
        jobs_by_status={},
        transitions={},
        exports=0,
        export_rows=0,
        export_bytes=0,
        export_seconds=0.0,
        effect_attempts={},
        effects_given_up={},
        source_caps=(cap,),
    )


def _one_heartbeat() -> list[exporter.Heartbeat]:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        exporter.Heartbeat(
            process="w",
            host="h",
            pid=1,
            kind="worker",
            started_at=at,
            pause_reason="storage_unavailable",
            age_seconds=1.0,
        )
    ]


# -- the lifecycle -----------------------------------------------------------------------------


def lifecycle_page(graph: exporter.Graph) -> str:
    effects = [
        [code(state), ", ".join(code(name) for name in graph.side_effects.get(state, ())) or "—"]
        for state in graph.terminal
    ]
    return (
        NOTICE.format(source="the fixture, `contracts/job-status-graph.json`")
        + "\n\n# Lifecycle\n\n"
        f"Job type `{graph.job_type}`, fingerprint `{graph.fingerprint}`. "
        f"{len(graph.states)} states: "
        + ", ".join(code(state) for state in graph.states)
        + f". A job starts {code(graph.initial)}; "
        + ", ".join(code(state) for state in graph.terminal)
        + " are terminal and stay so. Actors: "
        + ", ".join(code(actor) for actor in graph.actors)
        + ". Words that must never stand for a status (the forbidden aliases): "
        + ", ".join(graph.forbidden_aliases)
        + ".\n\n![The job lifecycle](lifecycle.svg)\n\n"
        "## Decision table\n\n" + exporter.render_table(graph) + "\n## Side effects of each "
        "terminal state\n\nWritten in the transaction that enters the state, carried out by "
        "`reportexport effects`.\n\n"
        + table(("state", "side effects"), effects)
        + "\n## As Mermaid\n\n```text\n"
        + exporter.render_mermaid(graph)
        + "```\n\nWhy the lifecycle is frozen and how the code and the database hold it: "
        "[The lifecycle](../explanation/lifecycle.md).\n"
    )


def lifecycle_svg(graph: exporter.Graph) -> str:
    return exporter.render_svg(graph)
