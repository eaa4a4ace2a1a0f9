"""Prospects and contact matching, backend-neutral: the rules that decide which prospect each
uploaded contact becomes, the dedupe keys, and the stored and API forms of a prospect.

Matching (spec 4.4, docs/api.md "Contact upload and matching"):
- email is compared case-insensitively, phone numbers in E.164 form (`store.identity`);
- a contact reuses an existing prospect only when all its email/phone matches are one and the
  same prospect (a safe match), and that prospect's LinkedIn URL does not contradict the
  contact's; the reused prospect's blank fields are filled, never overwritten;
- a prospect that was created apart from its matches (over a LinkedIn conflict or an ambiguity)
  stands aside when later contacts are matched, unless it has the contact's LinkedIn URL, so
  that uploading the same contacts again lands each where it did;
- otherwise a new prospect is created. Every prospect carries a `dedupeKey` derived from the
  contact that created it (unique per workspace), and new prospects are written as upserts on
  that key, so concurrent uploads of the same contacts converge on one prospect instead of
  racing a read against a write.

The backends (store/mongo/prospects.py, store/sqlite/prospects.py) run these rules inside
their upload; their `page` and `lookup` normalise email and phone filters exactly as the
matcher compares them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from store.clock import new_id, utcnow
from store.idempotency import IdempotentWrite
from store.identity import (
    CONTACT_FIELDS,
    clean_contact,
    fingerprint,
    normalize_email,
    normalize_linkedin,
    normalize_phone,
)

# Identifier fields stored beside the contact field they are derived from.
DERIVED = {"email": "emailNorm", "phoneNumber": "phoneE164", "linkedinUrl": "linkedinNorm"}
MATCH_FIELDS = dict.fromkeys(("_id", "dedupeKey", *CONTACT_FIELDS, *DERIVED.values()), 1)
DUPLICATE_KEY = 11000
RECORD_FIELDS = dict.fromkeys(
    (
        *("_id", *CONTACT_FIELDS, "ownerUserId", "listIds"),
        *("doNotCall", "doNotCallReason", "createdAt", "updatedAt"),
    ),
    1,
)
INSERT_BATCH = 5000


def record(doc: dict) -> dict:
    """The API form of a prospect: all eight contact fields (null when unknown)."""
    return {
        "id": doc["_id"],
        **{field: doc.get(field) for field in CONTACT_FIELDS},
        "ownerUserId": doc.get("ownerUserId"),
        "listIds": doc.get("listIds", []),
        # store/dnc.py: kept on the prospect, recomputed when the suppression list changes.
        "doNotCall": bool(doc.get("doNotCall")),
        "doNotCallReason": doc.get("doNotCallReason"),
        "createdAt": doc["createdAt"],
        "updatedAt": doc["updatedAt"],
    }


@dataclasses.dataclass
class Contact:
    """One uploaded contact, cleaned and with its normalised identifiers."""

    fields: dict
    email: str | None
    phone: str | None
    linkedin: str | None

    @classmethod
    def parse(cls, raw: dict, region: str) -> Contact:
        fields = clean_contact(raw)
        phone = normalize_phone(fields.get("phoneNumber"), region)
        if phone:
            fields["phoneNumber"] = phone
        return cls(
            fields,
            normalize_email(fields.get("email")),
            phone,
            normalize_linkedin(fields.get("linkedinUrl")),
        )

    def derived(self) -> dict:
        return derived_fields(self.email, self.phone, self.linkedin)


def derived_fields(email: str | None, phone: str | None, linkedin: str | None) -> dict:
    """The stored normalised identifiers, omitting the ones that are absent."""
    values = {"emailNorm": email, "phoneE164": phone, "linkedinNorm": linkedin}
    return {k: v for k, v in values.items() if v}


@dataclasses.dataclass(eq=False)
class Candidate:
    """A prospect as this upload sees it: an existing one, or one the upload will create."""

    key: str
    fields: dict
    email: str | None
    phone: str | None
    linkedin: str | None
    id: str | None = None  # None for a prospect this upload creates
    fills: dict = dataclasses.field(default_factory=dict)
    reason: str = ""  # why a new prospect was made despite matches: "linkedin", "ambiguous"
    created: bool = False  # set by the backend once this upload has inserted it

    @classmethod
    def from_doc(cls, doc: dict) -> Candidate:
        fields = {f: doc[f] for f in CONTACT_FIELDS if f in doc}
        email, phone, linkedin = doc.get("emailNorm"), doc.get("phoneE164"), doc.get("linkedinNorm")
        return cls(
            doc["dedupeKey"],
            fields,
            email,
            phone,
            linkedin,
            id=doc["_id"],
            reason=split_reason(doc["dedupeKey"], email, phone, linkedin),
        )

    def matches(self, contact: Contact) -> bool:
        return bool(
            (contact.email and contact.email == self.email)
            or (contact.phone and contact.phone == self.phone)
        )

    def fill_updates(self) -> dict[str, dict]:
        """Per blank field this upload fills (`fills`): the values to set, the field and the
        identifier derived from it (emailNorm, phoneE164, linkedinNorm) together."""
        derived = derived_fields(self.email, self.phone, self.linkedin)
        updates = {}
        for field, value in self.fills.items():
            update = {field: value}
            if DERIVED.get(field) in derived:
                update[DERIVED[field]] = derived[DERIVED[field]]
            updates[field] = update
        return updates

    def absorb(self, contact: Contact) -> None:
        """Fill this prospect's blank fields from the contact; never overwrite."""
        for field, value in contact.fields.items():
            if field not in self.fields:
                self.fields[field] = value
                self.fills[field] = value
        self.email = self.email or contact.email
        self.phone = self.phone or contact.phone
        self.linkedin = self.linkedin or contact.linkedin


def dedupe_key(contact: Contact, reason: str = "") -> str:
    """The identity a new prospect is created under; equal contacts give equal keys."""
    if contact.email:
        base = "e:" + contact.email
    elif contact.phone:
        base = "p:" + contact.phone
    elif contact.linkedin:
        base = "l:" + contact.linkedin
    else:
        base = "f:" + fingerprint(contact.fields)
    if reason == "ambiguous":
        base += "|ambiguous"
    if reason and contact.linkedin:
        base += "|l:" + contact.linkedin
    return base


def split_reason(key: str, email: str | None, phone: str | None, linkedin: str | None) -> str:
    """Why a stored prospect was created apart from its matches ("linkedin", "ambiguous"),
    read back from its dedupe key and identifiers; "" for one created under its contact's own
    identity. The identifiers a key was made from never change (blanks are filled, values
    never overwritten), but a LinkedIn URL may have been filled in after an ambiguity."""
    for base in (Contact({}, email, None, None), Contact({}, None, phone, None)):
        if not (base.email or base.phone):
            continue
        with_linkedin = dataclasses.replace(base, linkedin=linkedin)
        if linkedin and key == dedupe_key(with_linkedin, "linkedin"):
            return "linkedin"
        if key in (dedupe_key(base, "ambiguous"), dedupe_key(with_linkedin, "ambiguous")):
            return "ambiguous"
    return ""


def resolve(contact: Contact, pool: list[Candidate]) -> Candidate:
    """The prospect a contact lands on: a safe match in `pool`, or a new one added to it.

    Safe: the contact's email and phone matches are all one prospect whose LinkedIn URL does
    not contradict the contact's. Among several matches, the one with exactly the contact's
    LinkedIn URL is the same person when every other match has a different LinkedIn URL (this
    is what makes re-uploading a contact that once split off over a LinkedIn conflict land on
    its own prospect again). Prospects that were split off from their matches (`reason`) stand
    aside unless they carry the contact's own LinkedIn URL (or every match is one): a contact
    lands where it did before they were split off, so that uploading the same contacts again
    lands each where it did, also when a later contact of the request split one off.
    """
    found = [c for c in pool if c.matches(contact)]
    matches = [
        c for c in found if not c.reason or (contact.linkedin and c.linkedin == contact.linkedin)
    ] or found
    if len(matches) > 1 and contact.linkedin:
        same_person = [c for c in matches if c.linkedin == contact.linkedin]
        others = [c for c in matches if c.linkedin != contact.linkedin]
        # Only when every other match is a different person by its own LinkedIn URL; a match
        # without one could be this person too, so the matches stay ambiguous.
        if len(same_person) == 1 and all(c.linkedin for c in others):
            return same_person[0]
    if len(matches) == 1:
        only = matches[0]
        if not (contact.linkedin and only.linkedin and only.linkedin != contact.linkedin):
            return only
    reason = "ambiguous" if len(matches) > 1 else ("linkedin" if matches else "")
    key = dedupe_key(contact, reason)
    for candidate in pool:
        if candidate.key == key:
            return candidate
    created = Candidate(key, {}, None, None, None, reason=reason)
    pool.append(created)
    return created


REASONS = {"linkedin": "linkedin_conflict", "ambiguous": "ambiguous_match"}


def new_prospect_id(once: IdempotentWrite | None, key: str) -> str:
    """The id of a prospect an upload creates under dedupe key `key`: with an Idempotency-Key,
    derived from it (the same in every attempt of the request), else random."""
    return once.record_id("prospect", key) if once else new_id()


def created_reason(key: str, linkedin: str | None) -> str:
    """Why the prospect created under dedupe key `key` (see dedupe_key) was made despite email
    or phone matches: "ambiguous", "linkedin" or ""."""
    suffix = f"|l:{linkedin}" if linkedin else None
    if suffix and key.endswith(suffix):
        return "ambiguous" if key[: -len(suffix)].endswith("|ambiguous") else "linkedin"
    return "ambiguous" if key.endswith("|ambiguous") else ""


def recognise_created(targets: list[Candidate], once: IdempotentWrite | None) -> None:
    """Prospects an earlier attempt of the same request created (their ids derive from its
    Idempotency-Key) count as created by this one, so that its retry answers as the first
    attempt would have."""
    if once is None:
        return
    for target in targets:
        if target.id and not target.created and target.id == new_prospect_id(once, target.key):
            target.created = True
            target.reason = created_reason(target.key, target.linkedin)


@dataclasses.dataclass
class Upload:
    """What a contact upload did: the list's prospect count afterwards, and per contact (in
    request order) the prospect it became and whether this upload created it, or that it was
    suppressed."""

    members: int
    results: list[dict]
    suppressed: int = 0  # contacts not added: on the do-not-call list (store/dnc.py)


def match_all(
    contacts: list[Contact], pool: list[Candidate]
) -> tuple[list[Candidate], list[Candidate]]:
    """The distinct prospects an upload touches, and the one each contact lands on."""
    targets, chosen = [], []
    for contact in contacts:
        target = resolve(contact, pool)
        target.absorb(contact)
        chosen.append(target)
        if target not in targets:
            targets.append(target)
    return targets, chosen


def outcomes(chosen: list[Candidate]) -> list[dict]:
    """Per contact: {"index", "prospectId", "outcome"} and, for a prospect created although
    email or phone matches existed, "reason". A prospect's first contact in the request says
    "created" when this upload created it; every other contact says "reused"."""
    results, seen = [], set()
    for index, target in enumerate(chosen):
        entry = {"index": index, "prospectId": target.id, "outcome": "reused"}
        if target.created and id(target) not in seen:
            entry["outcome"] = "created"
            if target.reason:
                entry["reason"] = REASONS[target.reason]
        seen.add(id(target))
        results.append(entry)
    return results


def prospect_document(
    workspace_id: str,
    contact: Contact,
    key: str,
    owner_user_id: str | None,
    now: dt.datetime,
    list_ids: list[str] | None = None,
    prospect_id: str | None = None,
) -> dict:
    """The stored form of a new prospect (also used by the demo seeder)."""
    return {
        "_id": prospect_id or new_id(),
        "workspaceId": workspace_id,
        "dedupeKey": key,
        **contact.fields,
        **contact.derived(),
        "ownerUserId": owner_user_id,
        "listIds": list_ids or [],
        "doNotCall": False,
        "doNotCallReason": None,
        "doNotCallSelf": False,
        "createdAt": now,
        "updatedAt": now,
    }


def seeded_document(
    workspace_id: str,
    contact: Contact,
    owner_user_id: str | None = None,
    list_ids: list[str] | None = None,
    created_at: dt.datetime | None = None,
    prospect_id: str | None = None,
) -> dict:
    """The stored form of a prospect inserted as is, without matching (Prospects.create:
    seeding and tests): a dedupe key of its own, so that it never merges with another."""
    return prospect_document(
        workspace_id,
        contact,
        dedupe_key(contact) + "|" + new_id(),
        owner_user_id,
        created_at or utcnow(),
        list_ids,
        prospect_id,
    )
