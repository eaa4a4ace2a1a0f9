"""Normalisation used by contact matching and by prospect filters."""

import pytest

from store.identity import clean_contact, normalize_email, normalize_linkedin, normalize_phone


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("Jane@Example.COM", "jane@example.com"),
        ("  a@b.c ", "a@b.c"),
        ("", None),
        ("  ", None),
        (None, None),
    ],
)
def test_email(raw, expected):
    assert normalize_email(raw) == expected


@pytest.mark.parametrize(
    "raw,region,expected",
    [
        ("(415) 555-0101", "US", "+14155550101"),
        ("+1 415 555 0101", "DE", "+14155550101"),
        ("030 1234567", "DE", "+49301234567"),
        ("+44 20 7946 0958", "US", "+442079460958"),
        ("12", "US", None),
        ("not a phone", "US", None),
        ("", "US", None),
    ],
)
def test_phone(raw, region, expected):
    assert normalize_phone(raw, region) == expected


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("https://www.linkedin.com/in/Jane-Doe/", "linkedin.com/in/jane-doe"),
        ("http://de.linkedin.com/in/jane-doe?trk=abc#x", "linkedin.com/in/jane-doe"),
        ("linkedin.com/in/jane-doe", "linkedin.com/in/jane-doe"),
        ("  ", None),
    ],
)
def test_linkedin(raw, expected):
    assert normalize_linkedin(raw) == expected


def test_clean_contact_trims_and_drops_blank_values():
    assert clean_contact({"firstName": "  Ann ", "lastName": " ", "email": ""}) == {
        "firstName": "Ann"
    }
