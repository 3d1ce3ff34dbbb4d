-- Detection is kept per endpoint. parked_states holds a target's detection
-- state at an endpoint it moved away from (probe_states holds the one at
-- its current endpoint, probe_states.origin): moving back resumes it, so a
-- short excursion to another endpoint loses no baseline, and a change made
-- at the endpoint meanwhile is seen on return.
CREATE TABLE parked_states (
    target_id  INTEGER NOT NULL REFERENCES targets (id),
    origin     TEXT    NOT NULL,
    states     BLOB    NOT NULL,
    parked_run INTEGER NOT NULL,
    PRIMARY KEY (target_id, origin)
);

-- event_probes.origin: the endpoint the flip was confirmed at. Answers at
-- another endpoint of the target never revert, withdraw or extend it.
-- Rows recorded before it take the origin their confirming run recorded
-- (run_targets.origin, kept since schema 15); rows still without one ('')
-- take the origin of the target's next run that can speak for it
-- (detection, as its state does).
ALTER TABLE event_probes ADD COLUMN origin TEXT NOT NULL DEFAULT '';
UPDATE event_probes SET origin = COALESCE((SELECT rt.origin FROM run_targets rt
    WHERE rt.run_id = event_probes.confirmed_run AND rt.target_id = event_probes.target_id), '');
-- Rows confirmed before run origins were kept belong to the endpoint the
-- target's state has been at since (schema 16 ended every open row at a
-- move), when the state knows it.
UPDATE event_probes SET origin = COALESCE((SELECT ps.origin FROM probe_states ps
    WHERE ps.target_id = event_probes.target_id), '') WHERE origin = '';
