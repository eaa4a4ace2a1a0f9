"""The do-not-call suppression list, backend-neutral: an entry's key, stored and API forms,
how a request's entries are read (phones and emails normalised exactly as contact matching
compares them, store.identity), why a prospect is do-not-call, and which uploaded contacts are
suppressed.

An entry is one phone number (E.164) or one email (lower case) of a workspace, stored once under
its `key` ("p:+14155550101", "e:ann@example.com"; unique per workspace). A prospect is
do-not-call while its own flag (`doNotCallSelf`) is set or its phone or email is on the list;
the backends keep `doNotCall` and `doNotCallReason` stored on the prospect, recomputed by
`reason` whenever an entry is added or removed, so that reads and the `doNotCall` filter cost
nothing more.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from store.clock import new_id
from store.identity import normalize_email, normalize_phone
from store.prospects import Candidate, Contact, match_all

RESOURCE = "do_not_call"  # the events' resource (do_not_call.added, do_not_call.removed)
MAX_ENTRIES = 1000
FIELDS = dict.fromkeys(("_id", "phoneNumber", "email", "reason", "createdAt"), 1)
# A prospect's stored do-not-call fields: the derived value and reason, and its own flag.
PROSPECT_FIELDS = ("doNotCall", "doNotCallReason", "doNotCallSelf")


class UnreadablePhone(ValueError):
    """An entry's phone number that cannot be read (400 with the entry's pointer)."""

    def __init__(self, index: int) -> None:
        super().__init__(f"entries[{index}].phoneNumber cannot be read")
        self.index = index


def phone_key(phone: str) -> str:
    return "p:" + phone


def email_key(email: str) -> str:
    return "e:" + email


@dataclasses.dataclass(frozen=True)
class Wanted:
    """One entry of a request, normalised: its key and its field (phoneNumber or email)."""

    key: str
    field: str
    value: str


def parse_entries(entries: list[dict], region: str) -> list[Wanted]:
    """The request's entries as stored (E.164 phone in `region`, lower-case email);
    UnreadablePhone names the first phone number that cannot be read."""
    wanted = []
    for index, entry in enumerate(entries):
        if "phoneNumber" in entry:
            phone = normalize_phone(entry["phoneNumber"], region)
            if phone is None:
                raise UnreadablePhone(index)
            wanted.append(Wanted(phone_key(phone), "phoneNumber", phone))
        else:
            email = normalize_email(entry["email"])
            if email is None:
                raise ValueError(f"entries[{index}].email is blank")
            wanted.append(Wanted(email_key(email), "email", email))
    return wanted


def lookup_key(phone: str | None, email: str | None, region: str) -> str | None:
    """The key a `?phoneNumber=` or `?email=` lookup reads ("" when it cannot be read: no
    entry has it)."""
    if phone is not None:
        e164 = normalize_phone(phone, region)
        return phone_key(e164) if e164 else ""
    if email is not None:
        norm = normalize_email(email)
        return email_key(norm) if norm else ""
    return None


def entry_document(
    workspace_id: str,
    wanted: Wanted,
    reason: str | None,
    now: dt.datetime,
    entry_id: str | None = None,
) -> dict:
    return {
        "_id": entry_id or new_id(),
        "workspaceId": workspace_id,
        "key": wanted.key,
        wanted.field: wanted.value,
        "reason": reason,
        "createdAt": now,
    }


def record(doc: dict) -> dict:
    """An entry's API form: its id, its phoneNumber or its email, its reason and createdAt."""
    found = {"id": doc["_id"]}
    for field in ("phoneNumber", "email"):
        if doc.get(field) is not None:
            found[field] = doc[field]
    found["reason"] = doc.get("reason")
    found["createdAt"] = doc["createdAt"]
    return found


def results(wanted: list[Wanted], entries: dict[str, dict], added: set[str]) -> list[dict]:
    """Per request entry: {"index", "entry", "outcome"}; "added" for the first request entry of
    a key this request inserted, "existing" for every other one."""
    found, seen = [], set()
    for index, item in enumerate(wanted):
        doc = entries[item.key]
        outcome = "added" if item.key in added and item.key not in seen else "existing"
        seen.add(item.key)
        found.append({"index": index, "entry": record(doc), "outcome": outcome})
    return found


def reason(own: bool, phone_listed: bool, email_listed: bool) -> str | None:
    """Why a prospect is do-not-call: its own flag first, then its phone, then its email."""
    if own:
        return "prospect"
    if phone_listed:
        return "suppressed_phone"
    if email_listed:
        return "suppressed_email"
    return None


def prospect_changes(prospects: list[dict], listed: set[str]) -> dict[str, str | None]:
    """Of stored prospects (with phoneE164, emailNorm and the do-not-call fields), the ones
    whose reason changes now that `listed` holds the entry keys of their identifiers on the
    list: prospect id -> its new reason (None: no longer do-not-call)."""
    changed = {}
    for doc in prospects:
        phone, email = doc.get("phoneE164"), doc.get("emailNorm")
        new = reason(
            bool(doc.get("doNotCallSelf")),
            phone is not None and phone_key(phone) in listed,
            email is not None and email_key(email) in listed,
        )
        if new != doc.get("doNotCallReason"):
            changed[doc["_id"]] = new
    return changed


def contact_keys(contacts: list[Contact]) -> set[str]:
    """The entry keys an upload's contacts would be suppressed by."""
    keys = {phone_key(c.phone) for c in contacts if c.phone}
    return keys | {email_key(c.email) for c in contacts if c.email}


@dataclasses.dataclass
class Screen:
    """Which contacts of an upload are suppressed: index -> the prospect each matched (or None)."""

    suppressed: dict[int, str | None]

    def kept(self, contacts: list[Contact]) -> list[Contact]:
        return [c for i, c in enumerate(contacts) if i not in self.suppressed]

    def merge(self, count: int, kept_results: list[dict]) -> list[dict]:
        """The results of the kept contacts (indexed among them) and of the suppressed ones,
        in request order."""
        merged, others = [], iter(kept_results)
        for index in range(count):
            if index in self.suppressed:
                merged.append(
                    {
                        "index": index,
                        "prospectId": self.suppressed[index],
                        "outcome": "suppressed",
                    }
                )
            else:
                merged.append({**next(others), "index": index})
        return merged


def screen(
    contacts: list[Contact], pool: list[Candidate], listed: set[str], dnc_ids: set[str]
) -> Screen:
    """Which contacts are suppressed: one of their identifiers is on the list (`listed`, the
    entry keys found of the upload's identifiers), or the prospect they match (in `pool`, the
    candidates as the upload reads them) is do-not-call (`dnc_ids`)."""
    _, chosen = match_all(contacts, pool)
    suppressed: dict[int, str | None] = {}
    for index, (contact, target) in enumerate(zip(contacts, chosen, strict=True)):
        on_list = (contact.phone and phone_key(contact.phone) in listed) or (
            contact.email and email_key(contact.email) in listed
        )
        if on_list or (target.id is not None and target.id in dnc_ids):
            suppressed[index] = target.id
    return Screen(suppressed)
