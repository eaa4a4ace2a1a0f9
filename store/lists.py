"""Dialer lists' backend-neutral rules: what a change of a list (PATCH /lists/{id}) changes,
and the bounds of the work that removes memberships (a removal request, a deleted list's
members, taken in batches)."""

from __future__ import annotations

import dataclasses

# A list's fields a change may set; `name` is trimmed, `ownerUserId` compared in lower case.
FIELDS = ("name", "ownerUserId")
# Members a deleted list's purge takes per unit of work (one transaction on SQLite, one
# marked bulk write on MongoDB): bounded, whatever the list's size.
PURGE_BATCH = 1000


def list_changes(doc: dict, fields: dict) -> dict:
    """What setting `fields` changes in the stored list `doc` (empty when nothing would)."""
    wanted = {}
    if "name" in fields:
        wanted["name"] = fields["name"].strip()
    if "ownerUserId" in fields:
        wanted["ownerUserId"] = fields["ownerUserId"].lower()
    return {name: value for name, value in wanted.items() if doc.get(name) != value}


@dataclasses.dataclass
class Removal:
    """What POST /lists/{id}/contacts/remove did: how many members left, the list's
    prospectsCount afterwards, and per requested id (in request order, in lower case) its
    outcome."""

    removed: int
    members: int
    results: list[dict]


def removal_results(prospect_ids: list[str], members: set[str]) -> list[dict]:
    """Each requested id's outcome: `removed` when it was a member (every occurrence of it),
    else `not_member` (unknown ids and other workspaces' alike)."""
    return [
        {
            "index": index,
            "prospectId": prospect_id,
            "outcome": "removed" if prospect_id in members else "not_member",
        }
        for index, prospect_id in enumerate(map(str.lower, prospect_ids))
    ]
