"""The byte-level proof of an erasure on the embedded store, for any test that needs it: the
values a person was stored under, in every form the store writes them, occur in 0 bytes of the
SQLite database file and of its write-ahead log (`-wal`; the `-shm` index holds no row data).

    forms = stored_forms(emails=["Ann.Lee@Example.com"], phones=["(415) 555-0101"],
                         names=["Ann", "Lee"])
    assert_present(db_path, forms)  # before: each value is there in some form
    ...                             # the erasure, the scrub
    assert_absent(db_path, forms)   # after: fails naming each form found, where, how often

`stored_forms` derives the forms as the store writes them (store/identity.py): an email as
given and lowercased (the matching form `emailNorm`, the dedupe key), a phone number as given
and in E.164 (`phoneE164`, the dedupe key, the calls' numbers), a name as given; each also as
JSON text escapes it (an event's `data`, a stored Idempotency-Key answer), where that differs.
Pass other values (notes, a company) as `names`: they are stored as given. A test first shows
that the values were in the files before the erasure (`assert_present`), so that the proof
cannot pass by looking at the wrong file. Values short enough to occur by chance (a two-letter
name) prove nothing: give distinctive ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from store.identity import normalize_email, normalize_phone

# The files SQLite keeps a database in: the file and its write-ahead log. (The `-shm` file is an
# index of the log's frames: page numbers and checksums, never row data.)
SUFFIXES = ("", "-wal")


def stored_forms(
    emails: Iterable[str] = (),
    phones: Iterable[str] = (),
    names: Iterable[str] = (),
    region: str = "US",
) -> dict[str, set[bytes]]:
    """Every form the store writes each of these values in, as UTF-8 bytes, by value (see the
    module's text)."""
    forms: dict[str, set[str]] = {}
    for email in emails:
        forms[email] = {email, normalize_email(email) or email}
    for phone in phones:
        forms[phone] = {phone, normalize_phone(phone, region) or phone}
    for name in names:
        forms[name] = {name}
    encoded = {}
    for value, texts in forms.items():
        if not value:
            raise ValueError("an empty value occurs everywhere: give the values themselves")
        encoded[value] = {text.encode() for text in texts} | {
            json.dumps(text)[1:-1].encode()
            for text in texts  # as JSON escapes it (ASCII only)
        }
    return encoded


def _all(forms: Mapping[str, set[bytes]] | Iterable[bytes]) -> set[bytes]:
    if isinstance(forms, Mapping):
        return set().union(*forms.values())
    return set(forms)


def occurrences(
    db_path: str | Path, forms: Mapping[str, set[bytes]] | Iterable[bytes]
) -> dict[tuple[str, bytes], int]:
    """How often each form occurs in each of the database's files that exist, by
    (file name, form); forms that occur nowhere are left out."""
    path = Path(db_path)
    wanted = _all(forms)
    found = {}
    for suffix in SUFFIXES:
        file = path.with_name(path.name + suffix)
        try:
            content = file.read_bytes()
        except FileNotFoundError:
            continue
        for form in wanted:
            if count := content.count(form):
                found[file.name, form] = count
    return found


def assert_absent(db_path: str | Path, forms: Mapping[str, set[bytes]] | Iterable[bytes]) -> None:
    """Fail unless every form occurs in 0 bytes of the database file and its write-ahead log."""
    found = occurrences(db_path, forms)
    assert not found, "erased values still in the database's files: " + ", ".join(
        f"{form!r} {count}x in {name}" for (name, form), count in sorted(found.items())
    )


def assert_present(db_path: str | Path, forms: Mapping[str, set[bytes]]) -> None:
    """Fail unless each value occurs, in one of its forms at least, in the database's files: the
    control before an erasure, so that the proof is known to look where the values were."""
    found = {form for _, form in occurrences(db_path, forms)}
    missing = sorted(value for value, its in forms.items() if not its & found)
    assert not missing, f"values never written to the database's files: {missing}"
