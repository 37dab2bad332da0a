"""Layer 4, the results store: its schema and migrations, database URLs, which process writes which run, and
copying runs between stores (SQLite or PostgreSQL, through SQLAlchemy)."""
