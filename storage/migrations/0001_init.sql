-- Runs, targets, observations and per-(target, probe) current state.
CREATE TABLE runs (
    id             INTEGER PRIMARY KEY,
    started_at     TEXT    NOT NULL,
    finished_at    TEXT,
    status         TEXT    NOT NULL CHECK (status IN ('running', 'complete', 'partial', 'aborted')),
    corpus_name    TEXT    NOT NULL,
    corpus_version TEXT    NOT NULL,
    corpus_hash    TEXT    NOT NULL,
    config_hash    TEXT    NOT NULL DEFAULT '',
    host           TEXT    NOT NULL DEFAULT '',
    version        TEXT    NOT NULL DEFAULT '',
    note           TEXT    NOT NULL DEFAULT ''
);

CREATE TABLE targets (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    provider   TEXT NOT NULL,
    model      TEXT NOT NULL,
    endpoint   TEXT NOT NULL,
    first_seen TEXT NOT NULL
);

CREATE TABLE run_targets (
    run_id          INTEGER NOT NULL REFERENCES runs (id),
    target_id       INTEGER NOT NULL REFERENCES targets (id),
    status          TEXT    NOT NULL,  -- complete | degraded | aborted
    observations    INTEGER NOT NULL DEFAULT 0,
    verdicts        INTEGER NOT NULL DEFAULT 0,
    transient       INTEGER NOT NULL DEFAULT 0,
    client_errors   INTEGER NOT NULL DEFAULT 0,
    unavailable     INTEGER NOT NULL DEFAULT 0,
    breaker_opened  INTEGER NOT NULL DEFAULT 0,
    requests        INTEGER NOT NULL DEFAULT 0,
    retries         INTEGER NOT NULL DEFAULT 0,
    requests_sha256 TEXT    NOT NULL DEFAULT '',
    tokens_in       INTEGER NOT NULL DEFAULT 0,
    tokens_out      INTEGER NOT NULL DEFAULT 0,
    cost_usd        REAL    NOT NULL DEFAULT 0,
    duration_ms     REAL    NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, target_id)
);
CREATE INDEX run_targets_target ON run_targets (target_id, run_id);

-- Corpus probes as they were at each version (evidence needs the bytes).
CREATE TABLE probes (
    sha256         TEXT PRIMARY KEY,
    probe_id       TEXT NOT NULL,
    corpus_version TEXT NOT NULL,
    role           TEXT NOT NULL,
    expect         TEXT NOT NULL,
    tags           TEXT NOT NULL,   -- comma-separated, sorted
    canonical      TEXT NOT NULL    -- canonical JSON
);

CREATE TABLE observations (
    id             INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES runs (id),
    target_id      INTEGER NOT NULL REFERENCES targets (id),
    probe_id       TEXT    NOT NULL,
    probe_sha256   TEXT    NOT NULL,
    sample         INTEGER NOT NULL DEFAULT 0,
    request_sha256 TEXT    NOT NULL,
    request_method TEXT    NOT NULL DEFAULT '',
    request_path   TEXT    NOT NULL DEFAULT '',  -- path and query (the fingerprint covers method, path, body)
    request_body   BLOB,              -- exact request body (gzip when large)
    class          TEXT    NOT NULL,
    stage          TEXT    NOT NULL DEFAULT '',
    categories     TEXT    NOT NULL DEFAULT '',  -- normalized, comma-separated, sorted
    signals        TEXT    NOT NULL DEFAULT '',  -- JSON array of probes.Signal
    reason         TEXT    NOT NULL DEFAULT '',
    message        TEXT    NOT NULL DEFAULT '',
    heuristic      INTEGER NOT NULL DEFAULT 0,
    unknown        TEXT    NOT NULL DEFAULT '',
    http_status    INTEGER NOT NULL DEFAULT 0,
    request_id     TEXT    NOT NULL DEFAULT '',
    model_id       TEXT    NOT NULL DEFAULT '',
    model_fp       TEXT    NOT NULL DEFAULT '',
    latency_ms     REAL    NOT NULL DEFAULT 0,
    tokens_in      INTEGER NOT NULL DEFAULT 0,
    tokens_out     INTEGER NOT NULL DEFAULT 0,
    cost_usd       REAL    NOT NULL DEFAULT 0,
    attempts       INTEGER NOT NULL DEFAULT 0,
    body_sha256    TEXT    NOT NULL DEFAULT '',
    body           BLOB,              -- gzip of the response body, capped
    body_truncated INTEGER NOT NULL DEFAULT 0,
    observed_at    TEXT    NOT NULL,
    UNIQUE (run_id, target_id, probe_id, sample)
);
CREATE INDEX observations_target_probe ON observations (target_id, probe_id, run_id);
