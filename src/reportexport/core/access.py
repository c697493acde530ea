"""Who may run a saved query: access rules of the catalog, and parameters bound to the person.

A rule is a list of groups; a person passes it when they belong to one of them, and everyone
signed in passes a rule that holds the word `everyone`. A saved query is guarded by two rules,
both of which must pass:

- its source's (`[sources.hr] access = ["hr"]`), or, when the source has none, the catalog's
  default (`[access] default = [...]`, itself `["everyone"]` when not written);
- its own (`[queries.payroll] access = ["payroll"]`), when it has one.

Operators pass every rule: they write the catalog and manage the groups. A parameter bound to
an attribute of the person (`bind = "country"`) takes its value from the person's record, never
from the request, and a person without that attribute cannot run the query, operators included.

This module decides; it reads nothing. The services hand it who is asking (`Member`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

EVERYONE = "everyone"
DEFAULT_RULE = (EVERYONE,)


@dataclass(frozen=True, kw_only=True)
class Member:
    """Who asks, as access sees them: their groups and attributes as they are now."""

    name: str
    is_operator: bool = False
    groups: frozenset[str] = frozenset()
    attributes: Mapping[str, str] = field(default_factory=dict)
    email: str | None = None  # where their announcements by e-mail go


@dataclass(frozen=True, kw_only=True)
class AccessRule:
    """The groups that may pass, and where the catalog says so (`queries.payroll.access`)."""

    groups: tuple[str, ...]
    where: str

    @property
    def for_everyone(self) -> bool:
        return EVERYONE in self.groups

    def admits(self, member: Member) -> bool:
        return member.is_operator or self.for_everyone or not member.groups.isdisjoint(self.groups)

    def describe(self) -> str:
        if self.for_everyone:
            return f"{self.where} = everyone"
        return f"{self.where} = {', '.join(self.groups) or 'nobody'}"


@dataclass(frozen=True, kw_only=True)
class QueryAccess:
    """Everything that decides whether one saved query may run for a person."""

    rules: tuple[AccessRule, ...]
    bound: Mapping[str, str] = field(default_factory=dict)  # parameter -> attribute

    @property
    def for_everyone(self) -> bool:
        """Anyone signed in may run it as they are: no group needed, no attribute bound."""
        return all(rule.for_everyone for rule in self.rules) and not self.bound

    def refusal(self, member: Member) -> Refusal | None:
        """Why `member` may not run the query, or None when they may."""
        for rule in self.rules:
            if not rule.admits(member):
                return Refusal(rule=rule, attribute=None)
        for parameter, attribute in self.bound.items():
            if not member.attributes.get(attribute):
                return Refusal(rule=None, attribute=attribute, parameter=parameter)
        return None

    def job_refusal(self, member: Member, parameters: Mapping[str, object]) -> Refusal | None:
        """Why a job made with `parameters` may no longer run for `member`: a rule that no
        longer includes them, or a bound value that is no longer theirs."""
        refusal = self.refusal(member)
        if refusal is not None:
            return refusal
        for parameter, attribute in self.bound.items():
            if parameters.get(parameter) != member.attributes.get(attribute):
                return Refusal(rule=None, attribute=attribute, parameter=parameter, changed=True)
        return None

    def bound_values(self, member: Member) -> dict[str, str]:
        """The values of the bound parameters, from the person's record (check `refusal`
        first: an attribute the person lacks is left out)."""
        return {
            parameter: member.attributes[attribute]
            for parameter, attribute in self.bound.items()
            if member.attributes.get(attribute)
        }


@dataclass(frozen=True, kw_only=True)
class Refusal:
    """A rule the person does not pass, or an attribute they do not have."""

    rule: AccessRule | None
    attribute: str | None
    parameter: str | None = None
    changed: bool = False  # the attribute is there, with another value than the job's

    @property
    def names(self) -> str:
        """Where the catalog says it: `queries.payroll.access`, `parameters.country.bind`."""
        if self.rule is not None:
            return self.rule.where
        return f"parameters.{self.parameter}.bind"

    @property
    def reason(self) -> str:
        if self.rule is not None:
            return f"the access rule {self.rule.describe()} does not include you"
        return (
            f"its parameter {self.parameter} is bound to your attribute {self.attribute}, "
            "which your record does not have"
        )

    def reason_for(self, name: str) -> str:
        """The same reason, about someone else (an audit, a canceled job's reason)."""
        if self.rule is not None:
            return f"the access rule {self.rule.describe()} does not include {name}"
        if self.changed:
            return (
                f"its parameter {self.parameter} is bound to the attribute {self.attribute}, "
                f"whose value for {name} is no longer the job's"
            )
        return (
            f"its parameter {self.parameter} is bound to the attribute {self.attribute}, "
            f"which {name} does not have"
        )


def query_access(
    *,
    query_name: str,
    query_rule: tuple[str, ...] | None,
    source_name: str,
    source_rule: tuple[str, ...] | None,
    default_rule: tuple[str, ...] | None,
    bound: Mapping[str, str],
) -> QueryAccess:
    """The rules of one saved query, from what the catalog wrote (None: not written)."""
    if source_rule is not None:
        first = AccessRule(groups=source_rule, where=f"sources.{source_name}.access")
    else:
        groups = DEFAULT_RULE if default_rule is None else default_rule
        first = AccessRule(groups=groups, where="access.default")
    rules = [first]
    if query_rule is not None:
        rules.append(AccessRule(groups=query_rule, where=f"queries.{query_name}.access"))
    return QueryAccess(rules=tuple(rules), bound=dict(bound))


def rule_problems(
    access: QueryAccess, *, groups: frozenset[str] | None, attributes: frozenset[str] | None
) -> list[str]:
    """What makes a query's rules unable to work: a rule naming no group, or a group or
    attribute nobody has (`groups` and `attributes` are those known to the job store; None
    when it was not asked)."""
    problems: list[str] = []
    for rule in access.rules:
        if not rule.groups:
            problems.append(f"{rule.where} names no group: only operators may run it")
        if rule.for_everyone and len(rule.groups) > 1:
            others = ", ".join(g for g in rule.groups if g != EVERYONE)
            problems.append(f"{rule.where} holds everyone and {others}: the groups say nothing")
        if groups is not None:
            for group in rule.groups:
                if group != EVERYONE and group not in groups:
                    problems.append(f"{rule.where}: there is no group {group} in the job store")
    if attributes is not None:
        for parameter, attribute in access.bound.items():
            if attribute not in attributes:
                problems.append(
                    f"parameters.{parameter}.bind: nobody has the attribute {attribute}, so "
                    "nobody can run it"
                )
    return problems


class AccessWithdrawnError(Exception):
    """A job whose owner may no longer run it (the worker checks when it takes the job)."""

    def __init__(self, refusal: Refusal, owner: str) -> None:
        super().__init__(f"access withdrawn: {refusal.reason_for(owner)}")
        self.refusal = refusal
