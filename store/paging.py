"""Page-number paging, backend-neutral: the page of records a store returns, and its limits."""

from __future__ import annotations

import dataclasses

# Past this offset a database's skip would overflow; such a page is empty by definition.
MAX_SKIP = 2**62


@dataclasses.dataclass
class Page:
    items: list[dict]
    total: int
    page: int
    page_size: int

    @property
    def has_more(self) -> bool:
        return self.page * self.page_size < self.total
