"""The documents hold together: every relative link between them (and its #anchor) resolves,
the README is a short front door that maps every document (docs/how-to/ included), and no
document but the changelog speaks of the project's history."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.markdown import DOCS, ROOT, headings

DOCUMENTS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    found: set[str] = set()
    seen: dict[str, int] = {}
    for level in range(1, 7):
        for heading in headings(text, level):
            base = slug(heading)
            count = seen.get(base, 0)
            found.add(base if count == 0 else f"{base}-{count}")
            seen[base] = count + 1
    return found


def without_code(text: str) -> str:
    """The text outside fenced code blocks and inline code."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def test_every_relative_link_and_anchor_resolves():
    broken = []
    for document in DOCUMENTS:
        for target in LINK.findall(without_code(document.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):
                continue  # an absolute URL
            path, _, anchor = target.partition("#")
            resolved = (document.parent / path).resolve() if path else document
            if not resolved.exists():
                broken.append(f"{document.name}: {target} (no such file)")
            elif anchor and anchor not in anchors(resolved):
                broken.append(f"{document.name}: {target} (no such heading)")
    assert broken == []


def test_the_readme_is_short_and_maps_every_document():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    linked = set(LINK.findall(readme))
    for document in [*sorted(DOCS.rglob("*.md")), ROOT / "CHANGELOG.md"]:
        assert str(document.relative_to(ROOT)) in linked, document.name


def test_only_the_changelog_speaks_of_history():
    words = re.compile(r"\bissues? #?\d+|\bthis session\b|\bsessions?\b|\bissues? \d+/\d+", re.I)
    for document in DOCUMENTS:
        if document.name == "CHANGELOG.md":
            continue
        hits = words.findall(document.read_text(encoding="utf-8"))
        assert hits == [], f"{document.name}: {hits}"
