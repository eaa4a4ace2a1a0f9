"""Normalisation of the identifiers that contact matching compares: email, phone, LinkedIn URL.

Pure functions, shared by the contact matcher and by the prospect filters, so that a filter
finds exactly what the matcher would match.
"""

from __future__ import annotations

import hashlib
import re

import phonenumbers

CONTACT_FIELDS = (
    "firstName",
    "lastName",
    "phoneNumber",
    "email",
    "companyName",
    "companyDomain",
    "jobTitle",
    "linkedinUrl",
)


def normalize_email(value: str | None) -> str | None:
    value = (value or "").strip().lower()
    return value or None


def normalize_phone(value: str | None, region: str) -> str | None:
    """E.164 form of a phone number, or None when it cannot be read as a possible number."""
    value = (value or "").strip()
    if not value:
        return None
    try:
        number = phonenumbers.parse(value, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_possible_number(number):
        return None
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


_LINKEDIN_PREFIX = re.compile(r"^(?:https?://)?(?:[a-z]{2,3}\.)?(?:www\.)?", re.IGNORECASE)


def normalize_linkedin(value: str | None) -> str | None:
    """Compare LinkedIn URLs without scheme, www./country host prefix, query, fragment, or slash."""
    value = (value or "").strip().lower()
    if not value:
        return None
    value = _LINKEDIN_PREFIX.sub("", value)
    value = re.split(r"[?#]", value, maxsplit=1)[0].rstrip("/")
    return value or None


def clean_contact(contact: dict) -> dict:
    """Trimmed, non-blank fields of a contact; blank and whitespace-only values are dropped."""
    cleaned = {}
    for field in CONTACT_FIELDS:
        value = contact.get(field)
        if isinstance(value, str) and value.strip():
            cleaned[field] = value.strip()
    return cleaned


def fingerprint(contact: dict) -> str:
    """A stable digest of a contact's fields, for contacts that carry no email or phone."""
    parts = [f"{f}={contact.get(f, '').strip().lower()}" for f in CONTACT_FIELDS]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]
