-- Continuous attribution: after every run with an `attribution:` block the
-- report (the JSON `driftprobe attribute --json` prints) is stored here; a
-- failed attempt stores its error and a NULL report. Only the latest
-- AttributionReportsKept rows are kept: each insert prunes older ones in
-- its transaction. The metrics read the latest rows.
CREATE TABLE attribution_reports (
    id         INTEGER PRIMARY KEY,
    run_id     INTEGER NOT NULL REFERENCES runs(id),
    created_at TEXT NOT NULL,
    report     TEXT,                    -- JSON; NULL when the attempt failed
    error      TEXT NOT NULL DEFAULT '' -- why it failed; '' when report is set
);
