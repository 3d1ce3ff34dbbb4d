-- The run lease: at most one process runs against a database at a time.
CREATE TABLE run_lock (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    holder      TEXT NOT NULL,   -- unique per process
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    command     TEXT NOT NULL,
    acquired_at TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);
