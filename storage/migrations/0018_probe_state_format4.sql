-- Detection state blobs (probe_states.states, parked_states.states) are
-- written in format 4 from this version on: each probe also records the
-- answer that carries exactly its baseline's scores and that answer's
-- model, so a score drift cites the answer whose scores it moved from
-- (under the model it answered with), not the latest answer holding the
-- verdict. Retention keeps that answer.
-- The version bump makes an older driftprobe refuse the database (schema
-- newer than it knows) instead of failing to read the blobs. Nothing to
-- change in the tables.
SELECT 1;
