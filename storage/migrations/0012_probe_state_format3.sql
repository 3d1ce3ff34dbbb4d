-- Detection state blobs (probe_states.states) are written in format 3 from
-- this version on: each probe also records the run of its last revert, so
-- reverts far apart stop adding up to nondeterminism. No table changes;
-- the version bump makes an older driftprobe refuse the database (schema
-- newer than it knows) instead of failing to read the blobs.
SELECT 1;
