"""The SQL both stores share, written once: one module per table, its statements with `?` placeholders.

A store runs them through its `Db` (`db.Db`): SQLite's takes `?` as it is, PostgreSQL's numbers them ($1, $2, …), so
the placeholder style is data of the store, not a second copy of the SQL. Where the dialects differ (full-text
search, JSON functions, locks, the casefolded task id), the store's own module extends the shared class with its
statements; tables whose SQL differs throughout (evidence, memories, the index, migrations) stay in the stores.
"""
