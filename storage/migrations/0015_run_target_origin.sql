-- run_targets.origin: the endpoint a target's requests went to in a run
-- (scheme://host[:port] of the API root, or "sim:embedded" for the
-- in-process simulator). The request fingerprint leaves hosts out (the same
-- request sent to a test server and to the real API hashes alike), so a
-- target moved to another resource, region or gateway under the same name
-- is told apart by this column: detection treats a changed origin as an
-- input change. '' for runs recorded before this migration (unknown: no
-- change is inferred from it).
ALTER TABLE run_targets ADD COLUMN origin TEXT NOT NULL DEFAULT '';

-- input_changes.cause: what made the probe's answers incomparable with its
-- baseline: 'request' (its request fingerprint changed) or 'origin' (the
-- target's endpoint changed; the bytes may be the same).
ALTER TABLE input_changes ADD COLUMN cause TEXT NOT NULL DEFAULT 'request';
