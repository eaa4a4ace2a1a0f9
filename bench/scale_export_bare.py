"""The baseline of the export rows of `python -m bench.scale`: the bare limit of exporting every
call of a workspace, a loop in one thread that reads the same rows from the same SQLite file, in
the same order (the sync order, through the same index), and writes the same bytes (each call's
record, one per line) to a socket. No HTTP, no event loop, no batches by keyset: one cursor.

`python -m bench.scale_export_bare FILE WORKSPACE_ID SETTLED_BEFORE_MS PORT` connects to
127.0.0.1:PORT, writes the calls, closes, and prints the number of calls written.
"""

from __future__ import annotations

import socket
import sqlite3
import sys

FETCH = 1000
QUERY = "SELECT record FROM calls WHERE workspaceId = ? AND updatedAt <= ? ORDER BY updatedAt, _id"


def main(path: str, workspace_id: str, settled_before: int, port: int) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = bytes
    written = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        cursor = conn.execute(QUERY, (workspace_id, settled_before))
        while rows := cursor.fetchmany(FETCH):
            sock.sendall(b"".join(row[0] + b"\n" for row in rows))
            written += len(rows)
    conn.close()
    return written


if __name__ == "__main__":
    print(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
