-- runs.detected: 0 from the start of a run until detection commits for
-- it. A run finished (complete or partial) but never detected was cut off
-- between the two (the process killed in that instant); the next run
-- detects it first. Runs recorded before this migration count as detected.
ALTER TABLE runs ADD COLUMN detected INTEGER NOT NULL DEFAULT 1;
