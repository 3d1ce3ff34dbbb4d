-- Detection state, events and the GitHub outbox.

-- Current state per (target, probe): the baseline verdict on the current
-- request bytes, any unconfirmed candidate, and nondeterminism counters,
-- packed per target in one binary blob (diff/state.go documents the
-- format). One row per target keeps a run's detection at one read and one
-- write per target, whatever the number of probes or the length of history.
CREATE TABLE probe_states (
    target_id   INTEGER PRIMARY KEY REFERENCES targets (id),
    states      BLOB    NOT NULL,
    probes      INTEGER NOT NULL,
    updated_run INTEGER NOT NULL
);

-- Normalized categories ever seen firing on a target (composition history).
CREATE TABLE target_categories (
    target_id INTEGER NOT NULL REFERENCES targets (id),
    category  TEXT    NOT NULL,
    first_run INTEGER NOT NULL,
    PRIMARY KEY (target_id, category)
) WITHOUT ROWID;

-- Request-fingerprint changes: input changes, never policy flips.
CREATE TABLE input_changes (
    id         INTEGER PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES runs (id),
    target_id  INTEGER NOT NULL REFERENCES targets (id),
    probe_id   TEXT    NOT NULL,
    old_sha256 TEXT    NOT NULL,
    new_sha256 TEXT    NOT NULL
);

CREATE TABLE events (
    id                  INTEGER PRIMARY KEY,
    fingerprint         TEXT    NOT NULL UNIQUE,
    target_id           INTEGER NOT NULL REFERENCES targets (id),
    provider            TEXT    NOT NULL,
    kind                TEXT    NOT NULL,
    direction           TEXT    NOT NULL,
    opened_kind         TEXT    NOT NULL,  -- kind and direction when opened: what
    opened_direction    TEXT    NOT NULL,  -- driftprobe_events_total counts (never decreases)
    status              TEXT    NOT NULL DEFAULT 'open',  -- open | reverted
    new_categories      TEXT    NOT NULL DEFAULT '',
    vanished_categories TEXT    NOT NULL DEFAULT '',
    first_run           INTEGER NOT NULL,
    confirmed_run       INTEGER NOT NULL,
    last_run            INTEGER NOT NULL,
    reverted_run        INTEGER NOT NULL DEFAULT 0,
    model_before        TEXT    NOT NULL DEFAULT '',
    model_after         TEXT    NOT NULL DEFAULT '',
    corpus_version      TEXT    NOT NULL,
    corpus_hash         TEXT    NOT NULL,
    created_at          TEXT    NOT NULL,
    updated_at          TEXT    NOT NULL,
    issue_number        INTEGER NOT NULL DEFAULT 0,
    issue_url           TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX events_target ON events (target_id, last_run);
CREATE INDEX events_provider ON events (provider, status, last_run);

CREATE TABLE event_targets (
    event_id  INTEGER NOT NULL REFERENCES events (id),
    target_id INTEGER NOT NULL REFERENCES targets (id),
    joined_run INTEGER NOT NULL,
    PRIMARY KEY (event_id, target_id)
) WITHOUT ROWID;
CREATE INDEX event_targets_target ON event_targets (target_id, event_id);

CREATE TABLE event_probes (
    event_id       INTEGER NOT NULL REFERENCES events (id),
    target_id      INTEGER NOT NULL REFERENCES targets (id),
    probe_id       TEXT    NOT NULL,
    request_sha256 TEXT    NOT NULL,
    before         TEXT    NOT NULL,
    after          TEXT    NOT NULL,
    before_obs     INTEGER NOT NULL DEFAULT 0,
    after_obs      INTEGER NOT NULL DEFAULT 0,
    first_run      INTEGER NOT NULL,
    confirmed_run  INTEGER NOT NULL,
    flip_rate      REAL    NOT NULL DEFAULT 0,
    reverted_run   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (event_id, target_id, probe_id)
) WITHOUT ROWID;
CREATE INDEX event_probes_open ON event_probes (target_id, reverted_run, probe_id);

-- What happened to an event in which run (for run output and issue comments).
CREATE TABLE event_updates (
    id       INTEGER PRIMARY KEY,
    event_id INTEGER NOT NULL REFERENCES events (id),
    run_id   INTEGER NOT NULL,
    change   TEXT    NOT NULL,  -- opened | probes_added | target_joined | reverted | partially_reverted
    detail   TEXT    NOT NULL DEFAULT '',
    at       TEXT    NOT NULL
);

-- Deliveries owed to GitHub, queued in the transaction that records the
-- event change; sent afterwards, retried until done, never doubled.
CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY,
    event_id        INTEGER NOT NULL REFERENCES events (id),
    update_id       INTEGER NOT NULL REFERENCES event_updates (id),
    action          TEXT    NOT NULL,  -- open | comment | revert
    created_at      TEXT    NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT    NOT NULL DEFAULT '',
    last_error      TEXT    NOT NULL DEFAULT '',
    sent_at         TEXT    NOT NULL DEFAULT '',
    UNIQUE (update_id)
);
CREATE INDEX outbox_pending ON outbox (sent_at, id);
CREATE INDEX event_updates_event ON event_updates (event_id, id);

-- The model a target reports (model id|fingerprint), to tell a model
-- change from a policy change.
CREATE TABLE target_models (
    target_id  INTEGER PRIMARY KEY REFERENCES targets (id),
    model      TEXT    NOT NULL,
    prev_model TEXT    NOT NULL DEFAULT '',
    since_run  INTEGER NOT NULL
);
