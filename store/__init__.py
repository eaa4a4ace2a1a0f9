"""Every database query: one store interface over two backends (MongoDB, SQLite)."""
