-- Nondeterminism events recorded no after observation (after_obs = 0) for
-- the probes they marked, a detection bug fixed with this migration: point
-- each at the observation it was marked on, sample 0 of the probe in the
-- confirming run with the event's request bytes (0 if retention deleted it).
UPDATE event_probes SET after_obs = COALESCE((
    SELECT o.id FROM observations o
    WHERE o.run_id = event_probes.confirmed_run AND o.target_id = event_probes.target_id
      AND o.probe_id = event_probes.probe_id AND o.sample = 0
      AND o.request_sha256 = event_probes.request_sha256), 0)
WHERE after_obs = 0 AND event_id IN (SELECT id FROM events WHERE kind = 'nondeterminism');
