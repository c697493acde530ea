"""The gate's rules run in process on source snippets: the (line, code) pairs they report."""

from __future__ import annotations

import ast
import textwrap

from conftest import STARTER_FIXTURE
from frozen_lifecycle.gate.lexicon import Lexicon
from frozen_lifecycle.gate.python_rules import PythonRules
from frozen_lifecycle.gate.text_rules import TextRules
from frozen_lifecycle.graph import load_graph

LEXICON = Lexicon.of(load_graph(STARTER_FIXTURE))


def python_hits(source: str) -> list[tuple[int, str]]:
    text = textwrap.dedent(source).lstrip("\n")
    facts = PythonRules(LEXICON).check(ast.parse(text), text)
    return sorted({(hit.line, hit.code) for hit in facts.hits})


def text_hits(kind: str, source: str) -> list[tuple[int, str]]:
    text = textwrap.dedent(source).lstrip("\n")
    return sorted({(hit.line, hit.code) for hit in TextRules(LEXICON).check(kind, text).hits})
