"""Groups, who belongs to them, and people's attributes (what access rules and bound
parameters read; see core/access.py). Every change an operator makes is written with its audit
entry in one transaction."""

from __future__ import annotations

from reportexport.core.records import (
    AuditAction,
    AuditEntry,
    AuditObject,
    Group,
    Origin,
    PersonAccess,
)
from reportexport.store.audit import write_entry
from reportexport.store.driver import Driver, Session

# Who the rows the identity provider's sign-in writes name as their author.
PROVIDER_NAME = "identity provider"


class Groups:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.codec = driver.codec

    def create_group(
        self, name: str, description: str, *, by: str, audit: AuditEntry | None = None
    ) -> Group | None:
        """The new group; None when one of that name exists."""
        params = {"name": name, "description": description, "created_by": by}
        with self.driver.write() as session:
            row = session.row("create_group", params)
            if row is not None:
                _audit(session, audit)
        if row is None:
            return None
        group: Group = self.codec.record(Group, {**row, "member_count": 0})
        return group

    def delete_group(self, name: str, *, audit: AuditEntry | None = None) -> list[str] | None:
        """The group goes with its memberships; the names of those who were its members, or
        None when there is no such group."""
        with self.driver.write() as session:
            members = [row["name"] for row in session.rows("members_of_group", {"name": name})]
            row = session.row("delete_group", {"name": name})
            if row is None:
                return None
            _audit(session, audit)
        return members

    def list_groups(self) -> list[Group]:
        with self.driver.read() as session:
            rows = session.rows("list_groups")
        return [self.codec.record(Group, row) for row in rows]

    def members(self, name: str) -> list[str]:
        with self.driver.read() as session:
            return [row["name"] for row in session.rows("members_of_group", {"name": name})]

    def add_member(
        self,
        group: str,
        person: str,
        *,
        origin: Origin,
        by: str,
        audit: AuditEntry | None = None,
    ) -> bool:
        """The person joins the group; False when they were a member by that origin already
        (or the group or the person does not exist: check those first)."""
        params = {"group_name": group, "user_name": person, "origin": origin, "added_by": by}
        with self.driver.write() as session:
            row = session.row("add_member", params)
            if row is not None:
                _audit(session, audit)
        return row is not None

    def remove_member(self, group: str, person: str, *, audit: AuditEntry | None = None) -> bool:
        """The person leaves the group, whatever gave them the membership; False when they
        were not in it."""
        with self.driver.write() as session:
            rows = session.rows("remove_member", {"group_name": group, "user_name": person})
            if rows:
                _audit(session, audit)
        return bool(rows)

    def set_attribute(
        self,
        person: str,
        attribute: str,
        value: str,
        *,
        origin: Origin,
        by: str,
        audit: AuditEntry | None = None,
    ) -> bool:
        """The person's attribute takes `value`; False when there is no such person."""
        params = {
            "user_name": person,
            "attribute": attribute,
            "value": value,
            "origin": origin,
            "set_by": by,
        }
        with self.driver.write() as session:
            row = session.row("set_attribute", params)
            if row is not None:
                _audit(session, audit)
        return row is not None

    def unset_attribute(
        self, person: str, attribute: str, *, audit: AuditEntry | None = None
    ) -> bool:
        """The attribute goes; False when the person did not have it."""
        with self.driver.write() as session:
            row = session.row("unset_attribute", {"user_name": person, "attribute": attribute})
            if row is not None:
                _audit(session, audit)
        return row is not None

    def access_of(self, name: str) -> PersonAccess:
        """A person's groups and attributes as they are now (none for an unknown name)."""
        with self.driver.read() as session:
            groups = session.rows("groups_of_user", {"name": name})
            attributes = session.rows("attributes_of_user", {"name": name})
        return PersonAccess(
            name=name,
            groups=tuple((row["name"], row["origin"]) for row in groups),
            attributes=tuple((row["name"], row["value"], row["origin"]) for row in attributes),
        )

    def sync_from_provider(
        self,
        user_id: int,
        person: str,
        *,
        groups: frozenset[str],
        attributes: dict[str, str | None],
    ) -> tuple[list[str], list[str]]:
        """Make the identity provider's memberships and attributes of a person what it says
        now, in one transaction (an operator's memberships stay; `attributes` maps each
        attribute the provider gives to its value, None when it gives none now). The groups
        it took away and the attributes it removed or changed."""
        lost_groups: list[str] = []
        lost_attributes: list[str] = []
        mine = {"user_id": user_id}
        with self.driver.write() as session:
            had = {row["name"] for row in session.rows("provider_groups_of_user", mine)}
            for group in sorted(had - groups):
                if session.rows("remove_provider_member", {**mine, "group_name": group}):
                    _provider_audit(session, "remove_member", "group", group, f"removed {person}")
                lost_groups.append(group)
            for group in sorted(groups - had):
                joined = {"group_name": group, "user_name": person, "origin": "provider",
                          "added_by": PROVIDER_NAME}  # fmt: skip
                if session.rows("add_member", joined):
                    _provider_audit(session, "add_member", "group", group, f"added {person}")
            rows = session.rows("attributes_of_user", {"name": person})
            current = {row["name"]: row["value"] for row in rows}
            for attribute, value in sorted(attributes.items()):
                if value is None:
                    if session.rows("unset_provider_attribute", {**mine, "attribute": attribute}):
                        removed = f"{attribute} removed"
                        _provider_audit(session, "unset_attribute", "person", person, removed)
                        lost_attributes.append(attribute)
                elif current.get(attribute) != value:
                    given = {"user_name": person, "attribute": attribute, "value": value,
                             "origin": "provider", "set_by": PROVIDER_NAME}  # fmt: skip
                    session.rows("set_attribute", given)
                    said = f"{attribute} = {value}"
                    _provider_audit(session, "set_attribute", "person", person, said)
                    if attribute in current:
                        lost_attributes.append(attribute)
        return lost_groups, lost_attributes

    def known_attributes(self) -> frozenset[str]:
        """The names of the attributes somebody has."""
        with self.driver.read() as session:
            return frozenset(row["name"] for row in session.rows("known_attributes"))


def _provider_audit(
    session: Session, action: AuditAction, kind: AuditObject, object_id: str, detail: str
) -> None:
    """What the identity provider's sign-in changed, in the audit as the operators' changes
    are, the person acting being the identity provider."""
    entry = AuditEntry(
        person=PROVIDER_NAME, action=action, object_kind=kind, object_id=object_id, detail=detail
    )
    write_entry(session, entry)


def _audit(session: Session, audit: AuditEntry | None) -> None:
    if audit is not None:
        write_entry(session, audit)
