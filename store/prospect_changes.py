"""Changing a prospect (PATCH /prospects/{id}), backend-neutral: what a change of its contact
fields and owner writes, with the identifiers matching compares and its dedupe key kept in
step, and the errors both backends raise.

A string sets a field and None clears it; a phone number is stored in E.164 and an email, phone
or LinkedIn URL moves its normalised identifier with it. When the email, phone or LinkedIn URL
changes (or any field of a prospect identified by its fields' fingerprint), the dedupe key is
made anew from the new values, as an upload of the prospect as it now is would make it: a later
upload of the old identifiers no longer lands on it. A new key that another prospect holds is a
conflict (`ProspectExists`): that prospect was created as the person with those identifiers.
"""

from __future__ import annotations

from store.dnc import email_key, phone_key, reason
from store.identity import CONTACT_FIELDS, normalize_email, normalize_linkedin, normalize_phone
from store.prospects import DERIVED, Contact, dedupe_key

IDENTIFYING = ("email", "phoneNumber", "linkedinUrl")
CHANGEABLE = (*CONTACT_FIELDS, "ownerUserId")
OWN_FLAG = "doNotCall"  # the body's name of the prospect's own do-not-call flag (doNotCallSelf)


class UnreadablePhone(ValueError):
    """The new phone number cannot be read as one (the handler answers 400 before this)."""


class NoContactLeft(ValueError):
    """The change would leave the prospect without any contact field."""


class ProspectExists(Exception):
    """Another live prospect holds the dedupe key the change makes; `fields` are the
    identifying fields the change set."""

    def __init__(self, fields: list[str]) -> None:
        super().__init__("another prospect was created under these identifiers")
        self.fields = fields


def changes_of(doc: dict, fields: dict, region: str) -> dict[str, object]:
    """The stored fields a PATCH of `fields` changes in the stored prospect `doc`, each with its
    new value (None: cleared), the dedupe key included when it moves; empty when nothing
    changes. The do-not-call fields are not among them (`do_not_call_changes`)."""
    new = {name: doc.get(name) for name in CHANGEABLE}
    for name, value in fields.items():
        if name == OWN_FLAG:
            continue
        if name not in CHANGEABLE:
            raise KeyError(name)
        if isinstance(value, str):
            value = value.strip()
            if name == "phoneNumber":
                value = normalize_phone(value, region)
                if value is None:
                    raise UnreadablePhone(fields[name])
            elif name == "ownerUserId":
                value = value.lower()
        new[name] = value or None
    if not any(new[name] for name in CONTACT_FIELDS):
        raise NoContactLeft()
    email = normalize_email(new["email"])
    phone = new["phoneNumber"]
    if phone is not None and phone == doc.get("phoneNumber"):
        phone = doc.get("phoneE164")  # unchanged: as it was read when stored
    linkedin = normalize_linkedin(new["linkedinUrl"])
    new.update(zip(DERIVED.values(), (email, phone, linkedin), strict=True))
    changes = {name: value for name, value in new.items() if doc.get(name) != value}
    contact_changed = any(name in changes for name in CONTACT_FIELDS)
    key = str(doc["dedupeKey"])
    if any(name in changes for name in IDENTIFYING) or (key.startswith("f:") and contact_changed):
        kept = {name: new[name] for name in CONTACT_FIELDS if new[name]}
        made = dedupe_key(Contact(kept, email, phone, linkedin))
        if made != key:
            changes["dedupeKey"] = made
    return changes


def dnc_keys(doc: dict, changes: dict) -> list[str]:
    """The do-not-call entry keys of the prospect's identifiers once `changes` are made (the
    backend reads which of them are on the list)."""
    phone = changes["phoneE164"] if "phoneE164" in changes else doc.get("phoneE164")
    email = changes["emailNorm"] if "emailNorm" in changes else doc.get("emailNorm")
    return [
        key for key in (phone and phone_key(str(phone)), email and email_key(str(email))) if key
    ]


def do_not_call_changes(
    doc: dict, fields: dict, changes: dict, listed: set[str]
) -> dict[str, object]:
    """The do-not-call fields a PATCH changes (store/dnc.py): the own flag when `fields` sets
    it, and the value and reason recomputed from the flag and the prospect's identifiers as
    they are after `changes` (`listed`: which of `dnc_keys` are on the list)."""
    own = bool(fields.get(OWN_FLAG, bool(doc.get("doNotCallSelf"))))
    phone = changes["phoneE164"] if "phoneE164" in changes else doc.get("phoneE164")
    email = changes["emailNorm"] if "emailNorm" in changes else doc.get("emailNorm")
    why = reason(
        own,
        bool(phone) and phone_key(str(phone)) in listed,
        bool(email) and email_key(str(email)) in listed,
    )
    found: dict[str, object] = {}
    if own != bool(doc.get("doNotCallSelf")):
        found["doNotCallSelf"] = own
    if why != doc.get("doNotCallReason"):
        found["doNotCall"] = why is not None
        found["doNotCallReason"] = why
    return found


def identifying(fields: dict) -> list[str]:
    """The identifying fields a PATCH sets (where a ProspectExists points)."""
    return [name for name in IDENTIFYING if fields.get(name) is not None] or [
        name for name in CONTACT_FIELDS if name in fields
    ]
