"""The lists' background work: a task of every serving process that carries out what a list's
delete leaves to do (its members lose it, in units of at most `list_purge_batch`) and, on
MongoDB, finishes a removal of contacts whose writer died (store.contract.lists `purge`).

The work is claimed through the store (SQLite: each unit one write transaction; MongoDB: a
lease on the list or the removal), so processes sharing a database share it, and a process
killed mid-way leaves the rest to the others or to itself after a restart. A DELETE kicks the
process that answered it, so the work starts at once; otherwise each process looks every
`interval` seconds.
"""

from __future__ import annotations

from server.background import KickedWork, cancelling
from store.contract import Store


class ListWork(KickedWork):
    what = "list work"

    def __init__(self, store: Store, batch: int, interval: float = 5.0) -> None:
        super().__init__(store, interval)
        self.batch = batch

    async def drain(self) -> int:
        """Do units until none is waiting; how much they did."""
        done = 0
        while not cancelling() and (did := await self.store.lists.purge(self.batch)):
            done += did
        return done
