"""Named parameters are found in SQL without being confused by strings, comments or casts."""

from __future__ import annotations

import pytest

from reportexport.core.sqlparams import Param, parameter_names, render, split_sql


def test_parameters_are_split_out_of_the_text() -> None:
    assert split_sql("SELECT * FROM t WHERE a = :a AND b > :b_2") == [
        "SELECT * FROM t WHERE a = ",
        Param("a"),
        " AND b > ",
        Param("b_2"),
    ]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT ':not_a_param' AS x",
        'SELECT 1 AS ":nope"',
        "SELECT 1 -- :comment\n",
        "SELECT 1 /* :comment\n :more */",
        "SELECT x::date FROM t",
        "SELECT 'it''s :quoted'",
    ],
)
def test_colons_inside_strings_comments_and_casts_are_not_parameters(sql: str) -> None:
    assert parameter_names(sql) == []
    assert "".join(s for s in split_sql(sql) if isinstance(s, str)) == sql


def test_a_parameter_after_a_cast_is_still_found() -> None:
    assert parameter_names("SELECT x::int + :n, :n, :m FROM t") == ["n", "m"]


def test_render_replaces_each_parameter_with_a_placeholder() -> None:
    assert render("a = :a OR b = :a", "${name}") == "a = $a OR b = $a"
