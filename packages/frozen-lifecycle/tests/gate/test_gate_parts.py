"""The gate's parts that are not rules, run in this process on small repositories: its
configuration, the files it reads and how it names them, pragmas, and how it prints findings.
The command's own tests (test_gate_command, test_scope_and_pragmas) run it as a process."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from frozen_lifecycle.gate.config import (
    DEFAULT_EXCLUDES,
    Config,
    ConfigError,
    compile_patterns,
    load_config,
)
from frozen_lifecycle.gate.findings import Finding, render
from frozen_lifecycle.gate.pragmas import (
    Pragma,
    StrictRule,
    Waived,
    apply_pragmas,
    find_pragmas,
)
from frozen_lifecycle.gate.sources import (
    display,
    git_listing,
    is_test_file,
    iter_sources,
    kind_of,
)
from frozen_lifecycle.provenance import DEFAULT_COMMAND


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- configuration --------------------------------------------------------------------------------


def test_without_a_configuration_the_defaults_hold(tmp_path: Path) -> None:
    assert load_config(tmp_path) == Config()
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n[tool.other]\na = 1\n')
    config = load_config(tmp_path)
    assert config == Config()
    assert config.source is None
    assert config.paths == (".",)
    assert config.strict == ("src/**",)
    assert config.regions == ("README.md",)
    assert config.generated_by == DEFAULT_COMMAND


def test_every_setting_is_read_from_pyproject(tmp_path: Path) -> None:
    write(
        tmp_path,
        "pyproject.toml",
        """
[tool.frozen-lifecycle.gate]
paths = ["src", "db"]
exclude = ["db/old/**"]
strict = ["src/shop/**"]
graph = "spec/graph.json"
typed-names = "src/shop/lifecycle.py"
regions = ["README.md", "docs/states.md"]
sqlite-guards = "db/guards.sqlite.sql"
postgresql-guards = "db/guards.postgresql.sql"
notify-channel = "orders"
generated-by = "make lifecycle"
""",
    )
    assert load_config(tmp_path) == Config(
        paths=("src", "db"),
        exclude=(*DEFAULT_EXCLUDES, "db/old/**"),
        strict=("src/shop/**",),
        graph="spec/graph.json",
        typed_names="src/shop/lifecycle.py",
        regions=("README.md", "docs/states.md"),
        sqlite_guards="db/guards.sqlite.sql",
        postgresql_guards="db/guards.postgresql.sql",
        notify_channel="orders",
        generated_by="make lifecycle",
        source="pyproject.toml",
    )


def test_empty_lists_keep_the_defaults_for_paths_and_clear_strict_and_regions(
    tmp_path: Path,
) -> None:
    write(tmp_path, "gate.toml", "paths = []\nstrict = []\nregions = []\n")
    config = load_config(tmp_path)
    assert config.paths == (".",)
    assert config.strict == ()
    assert config.regions == ()
    assert config.exclude == DEFAULT_EXCLUDES
    assert config.source == "gate.toml"


def test_the_configurations_targets_name_what_it_keeps_generated(tmp_path: Path) -> None:
    write(
        tmp_path,
        "gate.toml",
        'graph = "spec/graph.json"\ntyped-names = "src/shop/lifecycle.py"\n'
        'regions = ["docs/states.md"]\nsqlite-guards = "db/a.sql"\n'
        'postgresql-guards = "db/b.sql"\nnotify-channel = "orders"\ngenerated-by = "make x"\n',
    )
    targets = load_config(tmp_path).targets()
    assert targets.regions == ("docs/states.md",)
    assert targets.typed_names == "src/shop/lifecycle.py"
    assert targets.sqlite_guards == "db/a.sql"
    assert targets.postgresql_guards == "db/b.sql"
    assert targets.notify_channel == "orders"
    assert targets.provenance.fixture == "spec/graph.json"
    assert targets.provenance.command == "make x"
    assert Config().targets().provenance.fixture == "contracts/job-status-graph.json"


def test_a_pyproject_without_the_table_leaves_the_choice_to_gate_toml(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[tool.frozen-lifecycle]\nversion = "1"\n')
    write(tmp_path, "gate.toml", 'paths = ["src"]\n')
    config = load_config(tmp_path)
    assert config.paths == ("src",)
    assert config.source == "gate.toml"
    assert config.strict == ("src/**",)
    assert config.regions == ("README.md",)
    assert config.exclude == DEFAULT_EXCLUDES


def test_pyproject_comes_before_gate_toml(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[tool.frozen-lifecycle.gate]\npaths = ["lib"]\n')
    write(tmp_path, "gate.toml", 'paths = ["src"]\n')
    assert load_config(tmp_path).paths == ("lib",)


def test_the_former_table_is_read_alone_and_refused_beside_the_new_one(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[tool.reportexport.gate]\npaths = ["lib"]\n')
    config = load_config(tmp_path)
    assert (config.paths, config.source) == (("lib",), "pyproject.toml")
    write(
        tmp_path,
        "pyproject.toml",
        '[tool.reportexport.gate]\npaths = ["lib"]\n[tool.frozen-lifecycle.gate]\npaths = []\n',
    )
    with pytest.raises(ConfigError) as refused:
        load_config(tmp_path)
    assert str(refused.value) == (
        "pyproject.toml: both [tool.frozen-lifecycle.gate] and [tool.reportexport.gate]; "
        "keep the first"
    )


def test_an_empty_table_is_a_configuration(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.frozen-lifecycle.gate]\n")
    write(tmp_path, "gate.toml", 'paths = ["src"]\n')
    config = load_config(tmp_path)
    assert (config.paths, config.source) == ((".",), "pyproject.toml")


@pytest.mark.parametrize(
    "text",
    ['tool = "frozen"\n', "[tool]\nfrozen-lifecycle = 1\n", "[tool.frozen-lifecycle]\ngate = 1\n"],
)
def test_a_table_path_through_something_else_is_no_table(tmp_path: Path, text: str) -> None:
    write(tmp_path, "pyproject.toml", text)
    assert load_config(tmp_path) == Config()


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("gate.toml", "paths = [", "gate.toml: "),
        ("pyproject.toml", "[tool.frozen-lifecycle.gate]\npaths = [", "pyproject.toml: "),
        ("gate.toml", "zeta = 1\nalpha = 2\n", "gate.toml: unknown gate setting(s) alpha, zeta"),
        ("gate.toml", "graph = 1\n", "gate.toml: graph must be a path"),
        ("gate.toml", 'typed-names = "  "\n', "gate.toml: typed-names must be a path"),
        ("gate.toml", 'sqlite-guards = ""\n', "gate.toml: sqlite-guards must be a path"),
        ("gate.toml", "postgresql-guards = []\n", "gate.toml: postgresql-guards must be a path"),
        ("gate.toml", "notify-channel = 1\n", "gate.toml: notify-channel must be a word"),
        ("gate.toml", 'generated-by = " "\n', "gate.toml: generated-by must be a word"),
        ("gate.toml", 'paths = "src"\n', "gate.toml: paths must be a list of strings"),
        ("gate.toml", "exclude = [1]\n", "gate.toml: exclude must be a list of strings"),
        ("gate.toml", 'strict = ["a", 2]\n', "gate.toml: strict must be a list of strings"),
        ("gate.toml", "regions = {}\n", "gate.toml: regions must be a list of strings"),
    ],
)
def test_a_wrong_configuration_is_refused_by_name(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    write(tmp_path, name, text)
    with pytest.raises(ConfigError) as refused:
        load_config(tmp_path)
    if message.endswith(": "):  # TOML's own words follow the file's name
        assert str(refused.value).startswith(message)
        assert "Invalid value" in str(refused.value)
    else:
        assert str(refused.value) == message


def test_a_configuration_directory_is_no_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").mkdir()
    write(tmp_path, "gate.toml", 'paths = ["src"]\n')
    assert load_config(tmp_path).source == "gate.toml"


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("**/x.sql", "x.sql", True),
        ("**/x.sql", "a/b/x.sql", True),
        ("**/x.sql", "a/bx.sql", False),
        ("a/**", "a/b/c", True),
        ("a/**", "ab/c", False),
        ("a/*.sql", "a/b/c.sql", False),
        ("a/*.sql", "a/c.sql", True),
        ("a/?.sql", "a/c.sql", True),
        ("a/?.sql", "a/cd.sql", False),
        ("a/?.sql", "a//.sql", False),
        ("a/[bc].sql", "a/c.sql", True),
        ("a/[bc].sql", "a/d.sql", False),
        ("a/[!bc].sql", "a/d.sql", True),
        ("a/[!bc].sql", "a/b.sql", False),
        ("a/[b.sql", "a/[b.sql", True),
        ("a.sql", "a.sql", True),
        ("a.sql", "axsql", False),
        ("a+b", "a+b", True),
        ("/docs/", "docs/a.md", True),
        (" docs ", "docs", True),
        ("XML/", "XML/a", True),
        ("X", "X", True),
        ("a/**/b.sql", "a/x/y/b.sql", True),
        ("a/**/b.sql", "a/b.sql", True),
        ("a/**/b.sql", "a/xb.sql", False),
        ("src/**.py", "src/x/y.py", True),
        ("src/**.py", "src/x/ypy", False),
        ("a/*.sql", "a/csql", False),
        ("x][b", "x][b", True),
        ("]a[b]", "]ab", True),
        ("[a].[b]", "axb", False),
        ("[a].[b]", "a.b", True),
        ("x[!a!]", "x!", False),
        ("x[!a!]", "xb", True),
    ],
)
def test_patterns_match_as_documented(pattern: str, path: str, matches: bool) -> None:
    compiled = compile_patterns([pattern])
    assert compiled is not None
    assert (compiled.fullmatch(path) is not None) is matches


def test_no_pattern_matches_nothing_and_several_match_any() -> None:
    assert compile_patterns([]) is None
    assert compile_patterns(["", " / "]) is None
    either = compile_patterns(["a", "", "b/*.sql"])
    assert either is not None
    assert either.fullmatch("a/x")
    assert either.fullmatch("b/y.sql")
    assert not either.fullmatch("c")


# -- which files, of what kind, by what name ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("tests/unit/a.py", True),
        ("pkg/test/a.py", True),
        ("test_a.py", True),
        ("pkg/a_test.py", True),
        ("pkg/conftest.py", True),
        ("pkg/testing.py", False),
        ("pkg/contest.py", False),
        ("tests.py", False),
        ("pkg/latest_test.js", False),
        ("pkg/a_tests/b.py", False),
    ],
)
def test_a_test_file_is_known_by_its_folder_or_its_name(name: str, expected: bool) -> None:
    assert is_test_file(name) is expected


@pytest.mark.parametrize(
    ("name", "head", "kind"),
    [
        ("a.py", "", "python"),
        ("a.PYI", "", "python"),
        ("a.sql", "", "sql"),
        ("a.jinja2", "", "template"),
        ("a.tsx", "", "script"),
        ("a.yml", "", "yaml"),
        ("a.json", "", "json"),
        ("a.markdown", "", "markdown"),
        ("a.toml", "", "text"),
        ("a.png", "", None),
        ("run", "#!/usr/bin/env python3\nprint(1)\n", "python"),
        ("run", "#!/usr/bin/python\n", "python"),
        ("run", "#!/bin/sh\necho python\n", "text"),
        ("run", "#!/usr/bin/env bash\n", "text"),
        ("run", "#!/usr/bin/env node\n", "text"),
        ("run", "#!/usr/bin/env perl\n", None),
        ("run", "echo hi\n#!/bin/sh\n", None),
        ("README", "plain words\n", None),
    ],
)
def test_a_files_kind_is_its_suffix_or_its_shebang(
    tmp_path: Path, name: str, head: str, kind: str | None
) -> None:
    assert kind_of(write(tmp_path, name, head)) == kind


def test_a_file_without_suffix_that_cannot_be_read_has_no_kind(tmp_path: Path) -> None:
    assert kind_of(tmp_path / "missing") is None
    assert kind_of(tmp_path / "missing.py") == "python"


def tree_of(root: Path) -> None:
    for name in (
        "z.py",
        "a.sql",
        "src/b.py",
        "src/a/c.js",
        "src/__pycache__/x.py",
        "src/node_modules/x.js",
        "src/pkg.egg-info/x.json",
        "src/var/kept.sql",
        "var/x.sql",
        "build/x.py",
        "notes.bin",
        "db/old/x.sql",
    ):
        write(root, name, "x\n")
    (root / "huge.sql").write_bytes(b"-" * 1_000_001)
    write(root, "limit.sql", "-" * 1_000_000)


EXPECTED = [
    ("a.sql", "sql"),
    ("limit.sql", "sql"),
    ("z.py", "python"),
    ("src/b.py", "python"),
    ("src/a/c.js", "script"),
    ("src/var/kept.sql", "sql"),
]


def names(
    root: Path, paths: list[Path], exclude: list[str], skip: set[str]
) -> list[tuple[str, str]]:
    found = iter_sources(root, paths, compile_patterns(exclude), skip)
    return [(name, kind) for path, name, kind in found if path.is_file()]


def test_outside_git_the_tree_is_walked_in_a_stable_order(tmp_path: Path) -> None:
    tree_of(tmp_path)
    assert git_listing(tmp_path) is None
    assert names(tmp_path, [tmp_path], ["db/old"], set()) == EXPECTED
    found = list(iter_sources(tmp_path, [tmp_path / "src"], None, {"src/b.py"}))
    assert [(path, name) for path, name, _ in found] == [
        (tmp_path / "src" / "a" / "c.js", "src/a/c.js"),
        (tmp_path / "src" / "var" / "kept.sql", "src/var/kept.sql"),
    ]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_in_git_the_listed_files_are_read_in_the_order_a_walk_gives(tmp_path: Path) -> None:
    tree_of(tmp_path)
    git(tmp_path, "init", "-q")
    write(tmp_path, ".gitignore", "ignored/\n")
    write(tmp_path, "ignored/x.sql", "x\n")
    git(tmp_path, "add", "z.py", "src/b.py", "db/old/x.sql")
    listing = git_listing(tmp_path)
    assert listing is not None
    assert listing[:4] == [".gitignore", "a.sql", "huge.sql", "limit.sql"]
    assert "ignored/x.sql" not in listing
    assert "src/__pycache__/x.py" not in listing
    assert "var/x.sql" not in listing
    assert "src/var/kept.sql" in listing
    assert names(tmp_path, [tmp_path], ["db/old"], set()) == EXPECTED
    (tmp_path / "z.py").unlink()  # tracked, deleted in the work tree
    assert names(tmp_path, [tmp_path], ["db/old/**"], set()) == EXPECTED[:2] + EXPECTED[3:]


def test_a_subfolder_of_a_checkout_is_a_root_of_its_own(tmp_path: Path) -> None:
    """Its files are named from it, and its own var/ is data, as the walk has it."""
    tree_of(tmp_path)
    expected = [("b.py", "python"), ("a/c.js", "script")]
    root = tmp_path / "src"
    assert names(root, [root], [], set()) == expected
    git(tmp_path, "init", "-q")
    assert names(root, [root], [], set()) == expected


def test_paths_may_name_files_and_overlap_and_each_file_is_read_once(tmp_path: Path) -> None:
    tree_of(tmp_path)
    paths = [tmp_path / "src" / "b.py", tmp_path / "src", tmp_path / "a.sql", tmp_path / "z.py"]
    expected = [
        ("src/b.py", "python"),
        ("src/a/c.js", "script"),
        ("src/var/kept.sql", "sql"),
        ("a.sql", "sql"),
        ("z.py", "python"),
    ]
    assert names(tmp_path, paths, [], set()) == expected
    assert names(tmp_path, paths, ["z.py", "src/a"], {"a.sql"}) == [
        ("src/b.py", "python"),
        ("src/var/kept.sql", "sql"),
    ]
    git(tmp_path, "init", "-q")
    assert names(tmp_path, paths, [], set()) == expected
    assert names(tmp_path, paths, ["z.py", "src/a"], {"a.sql"}) == [
        ("src/b.py", "python"),
        ("src/var/kept.sql", "sql"),
    ]


def test_without_git_a_checkout_is_walked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree_of(tmp_path)
    git(tmp_path, "init", "-q")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert git_listing(tmp_path) is None
    assert names(tmp_path, [tmp_path], ["db"], set()) == EXPECTED


def test_a_folder_git_refuses_to_list_is_walked(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # a checkout by its folder, which git cannot read
    write(tmp_path, "a.sql", "x\n")
    assert git_listing(tmp_path) is None
    assert names(tmp_path, [tmp_path], [], set()) == [("a.sql", "sql")]


def test_a_file_is_named_relative_to_the_root_or_as_given_outside_it(tmp_path: Path) -> None:
    inside = write(tmp_path, "root/src/a.py", "")
    outside = write(tmp_path, "elsewhere/b.py", "")
    assert display(inside, tmp_path / "root") == "src/a.py"
    assert display(tmp_path / "root", tmp_path / "root") == "."
    assert display(outside, tmp_path / "root") == outside.as_posix()


def test_a_file_that_vanishes_while_listed_is_left_out(tmp_path: Path) -> None:
    write(tmp_path, "a.sql", "x\n")
    (tmp_path / "b.sql").symlink_to(tmp_path / "gone.sql")
    write(tmp_path, "c.sql", "x\n")
    assert [n for _, n, _ in iter_sources(tmp_path, [tmp_path], None, set())] == ["a.sql", "c.sql"]


def test_a_file_excluded_by_name_is_left_out_of_a_walk(tmp_path: Path) -> None:
    tree_of(tmp_path)
    assert names(tmp_path, [tmp_path], ["db", "a.sql", "src/*/c.js"], set()) == [
        ("limit.sql", "sql"),
        ("z.py", "python"),
        ("src/b.py", "python"),
        ("src/var/kept.sql", "sql"),
    ]


def test_a_shebang_is_read_only_for_a_file_without_suffix(tmp_path: Path) -> None:
    assert kind_of(write(tmp_path, "notes.xyz", "#!/bin/sh\n")) is None
    # the first 80 bytes: an interpreter named later is not read
    assert kind_of(write(tmp_path, "late", "#!" + "/" * 76 + " sh\n")) is None
    assert kind_of(write(tmp_path, "early", "#!" + "/" * 75 + " sh\n")) == "text"
    assert kind_of(write(tmp_path, "far", "#!" + "/" * 90 + " sh\n")) is None


def test_a_file_name_that_is_not_utf8_is_read_in_a_checkout(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    name = os.fsdecode(b"caf\xe9.sql")
    (tmp_path / name).write_text("x\n", encoding="utf-8")
    assert git_listing(tmp_path) == [name]
    assert names(tmp_path, [tmp_path], [], set()) == [(name, "sql")]


# -- pragmas -------------------------------------------------------------------------------------

REASON_MESSAGE = "a gate pragma names the codes it allows and why: `gate: allow <code> -- <reason>`"


@pytest.mark.parametrize(
    ("kind", "line"),
    [
        ("python", "x = 1  # gate: allow unknown-status -- a reason"),
        ("python", "x = 1  -- gate: allow unknown-status -- a reason"),
        ("sql", "SELECT 1; -- gate: allow unknown-status -- a reason"),
        ("sql", "SELECT 1; /* gate: allow unknown-status -- a reason */"),
        ("template", "x <!-- gate: allow unknown-status -- a reason -->"),
        ("template", "x {# gate: allow unknown-status -- a reason #}"),
        ("template", "x // gate: allow unknown-status -- a reason"),
        ("template", "x /* gate: allow unknown-status -- a reason */"),
        ("script", "x; // gate: allow unknown-status -- a reason"),
        ("script", "x; /* gate: allow unknown-status -- a reason */"),
        ("yaml", "x: 1  # gate: allow unknown-status -- a reason"),
        ("markdown", "x <!-- gate: allow unknown-status -- a reason -->"),
        ("text", "x = 1  # gate: allow unknown-status -- a reason"),
        ("text", "x -- gate: allow unknown-status -- a reason"),
        ("text", "x // gate: allow unknown-status -- a reason"),
        ("toml", "x = 1  # gate: allow unknown-status -- a reason"),
    ],
)
def test_each_kind_of_file_carries_a_pragma_in_its_comments(kind: str, line: str) -> None:
    assert list(find_pragmas("f", f"first\n{line}\n", kind)) == [
        Pragma(path="f", line=2, target=2, codes=("unknown-status",), reason="a reason")
    ]


@pytest.mark.parametrize(
    ("kind", "line"),
    [
        ("json", '{"a": 1} // gate: allow unknown-status -- a reason'),
        ("markdown", "# gate: allow unknown-status -- a reason"),
        ("yaml", "x: 1  // gate: allow unknown-status -- a reason"),
        ("script", "x; # gate: allow unknown-status -- a reason"),
        ("python", "x = 1  # gate allow unknown-status -- a reason"),
        ("python", "x = 1  # gate: allowed unknown-status -- a reason"),
    ],
)
def test_a_comment_form_of_another_kind_is_no_pragma(kind: str, line: str) -> None:
    assert list(find_pragmas("f", line, kind)) == []


def test_a_pragma_alone_on_its_line_waives_the_next_and_names_many_codes() -> None:
    text = "a\n  # gate: allow unknown-status, wrong-actor -- two at once\nb\n"
    assert list(find_pragmas("f", text, "python")) == [
        Pragma(
            path="f",
            line=2,
            target=3,
            codes=("unknown-status", "wrong-actor"),
            reason="two at once",
        )
    ]


def test_a_pragma_keeps_its_reason_whole_and_stops_at_the_comments_end() -> None:
    text = "x <!-- gate: allow unknown-status --  a reason -- with dashes  --> y -->\n"
    assert list(find_pragmas("f", text, "markdown")) == [
        Pragma(
            path="f", line=1, target=1, codes=("unknown-status",), reason="a reason -- with dashes"
        )
    ]


@pytest.mark.parametrize(
    "line",
    [
        "x = 1  # gate: allow unknown-status",
        "x = 1  # gate: allow unknown-status --   ",
        "x = 1  # gate: allow -- a reason",
        "x = 1  # gate: allow",
    ],
)
def test_a_pragma_without_codes_or_a_reason_is_a_finding(line: str) -> None:
    assert list(find_pragmas("f.py", f"a\n{line}\n", "python")) == [
        Finding(path="f.py", line=2, code="pragma-reason", message=REASON_MESSAGE)
    ]


def test_a_file_of_an_unknown_kind_takes_the_comments_of_text() -> None:
    assert list(find_pragmas("f", "x // gate: allow a-b -- why", "css")) == [
        Pragma(path="f", line=1, target=1, codes=("a-b",), reason="why")
    ]
    assert list(find_pragmas("f", "x /* gate: allow a-b -- why */", "css")) == []


def finding(path: str, line: int, code: str, message: str = "m") -> Finding:
    return Finding(path=path, line=line, code=code, message=message)


def pragma(path: str, line: int, target: int, *codes: str) -> Pragma:
    return Pragma(path=path, line=line, target=target, codes=codes, reason=f"why {line}")


NOTHING_STRICT = StrictRule((), None)


def test_a_pragma_waives_its_lines_findings_of_its_codes_only() -> None:
    findings = [
        finding("a.py", 3, "unknown-status"),
        finding("a.py", 3, "wrong-actor"),
        finding("a.py", 4, "unknown-status"),
        finding("b.py", 3, "unknown-status"),
    ]
    kept, waived = apply_pragmas(findings, [pragma("a.py", 2, 3, "unknown-status")], NOTHING_STRICT)
    assert kept == findings[1:]
    assert waived == [Waived(finding=findings[0], reason="why 2")]
    assert waived[0].text() == "a.py:3: unknown-status -- why 2"


def test_of_two_pragmas_on_a_line_the_one_naming_the_code_waives_it() -> None:
    findings = [finding("a.py", 3, "wrong-actor")]
    pragmas = [pragma("a.py", 2, 3, "unknown-status"), pragma("a.py", 3, 3, "wrong-actor")]
    kept, waived = apply_pragmas(findings, pragmas, NOTHING_STRICT)
    assert waived == [Waived(finding=findings[0], reason="why 3")]
    assert kept == [
        finding(
            "a.py",
            2,
            "pragma-unused",
            "the pragma allows unknown-status but line 3 has no such finding",
        )
    ]


def test_a_pragma_that_waives_nothing_is_a_finding_naming_its_codes_and_line() -> None:
    kept, waived = apply_pragmas([], [pragma("a.py", 4, 5, "x-y", "z-w")], NOTHING_STRICT)
    assert waived == []
    assert kept == [
        finding(
            "a.py", 4, "pragma-unused", "the pragma allows x-y, z-w but line 5 has no such finding"
        )
    ]


def test_a_strict_finding_is_kept_and_says_so_and_its_pragma_counts_as_used() -> None:
    strict = StrictRule({"forbidden-alias"}, compile_patterns(["src/**"]))
    findings = [
        finding("src/a.py", 1, "forbidden-alias", "quoted"),
        finding("docs/a.py", 1, "forbidden-alias", "quoted"),
        finding("src/a.py", 2, "unknown-status", "word"),
    ]
    pragmas = [
        pragma("src/a.py", 1, 1, "forbidden-alias"),
        pragma("docs/a.py", 1, 1, "forbidden-alias"),
        pragma("src/a.py", 2, 2, "unknown-status"),
    ]
    kept, waived = apply_pragmas(findings, pragmas, strict)
    assert kept == [
        finding("src/a.py", 1, "forbidden-alias", "quoted (no pragma waives this here)")
    ]
    assert waived == [
        Waived(finding=findings[1], reason="why 1"),
        Waived(finding=findings[2], reason="why 2"),
    ]


def test_the_strict_rule_needs_both_its_code_and_its_paths() -> None:
    strict = StrictRule(["forbidden-alias"], compile_patterns(["src/**"]))
    assert strict(finding("src/a.py", 1, "forbidden-alias"))
    assert not strict(finding("src/a.py", 1, "unknown-status"))
    assert not strict(finding("docs/src/a.py", 1, "forbidden-alias"))
    assert not StrictRule(["forbidden-alias"], None)(finding("src/a.py", 1, "forbidden-alias"))


# -- how findings are printed --------------------------------------------------------------------

FINDINGS = [
    Finding(path="src/a.py", line=3, code="unknown-status", message="'x' is not a state"),
    Finding(path="db/b.sql", line=1, code="wrong-actor", message="'robot' is not an actor"),
]


def test_findings_print_as_text_one_a_line() -> None:
    assert FINDINGS[0].text() == "src/a.py:3: unknown-status: 'x' is not a state"
    assert render(FINDINGS, "text") == (
        "src/a.py:3: unknown-status: 'x' is not a state\n"
        "db/b.sql:1: wrong-actor: 'robot' is not an actor\n"
    )
    assert render([], "text") == ""


def test_findings_print_as_github_annotations() -> None:
    assert render(FINDINGS, "github") == (
        "::error file=src/a.py,line=3,title=unknown-status::'x' is not a state\n"
        "::error file=db/b.sql,line=1,title=wrong-actor::'robot' is not an actor\n"
    )


def test_findings_print_as_json() -> None:
    text = render(FINDINGS, "json")
    assert text.endswith("]\n")
    assert text.startswith('[\n  {\n    "path": "src/a.py",\n')
    assert json.loads(text) == [
        {"path": "src/a.py", "line": 3, "code": "unknown-status", "message": "'x' is not a state"},
        {
            "path": "db/b.sql",
            "line": 1,
            "code": "wrong-actor",
            "message": "'robot' is not an actor",
        },
    ]
    assert render([], "json") == "[]\n"


def test_findings_sort_by_path_then_line() -> None:
    assert sorted(FINDINGS) == [FINDINGS[1], FINDINGS[0]]
    assert os.sep  # the names are POSIX paths on every system


def test_every_pragma_of_a_file_is_found_past_lines_that_are_not_one() -> None:
    text = (
        "# see the gate: docs\n"
        "x = 1  # gate: allow unknown-status\n"
        "y = 2  # gate: allow wrong-actor -- a reason\n"
    )
    assert list(find_pragmas("f.py", text, "python")) == [
        Finding(path="f.py", line=2, code="pragma-reason", message=REASON_MESSAGE),
        Pragma(path="f.py", line=3, target=3, codes=("wrong-actor",), reason="a reason"),
    ]
