-- Detection state blobs (probe_states.states) are written in format 3 from
-- this version on: each probe also records the run of its last revert and
-- the candidate its current one replaced, so reverts far apart stop adding
-- up to nondeterminism and a change in stages is told from back and forth.
-- The version bump makes an older driftprobe refuse the database (schema
-- newer than it knows) instead of failing to read the blobs.
--
-- event_probes.withdrawn: 1 when the probe left the event because it was
-- marked nondeterministic (its reverted_run is that run), not because it
-- flipped back.
ALTER TABLE event_probes ADD COLUMN withdrawn INTEGER NOT NULL DEFAULT 0;

