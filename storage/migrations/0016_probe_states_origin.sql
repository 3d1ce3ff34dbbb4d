-- probe_states.origin: the endpoint (run_targets.origin) the target's
-- detection state was last brought up to date at. Detection compares a
-- run's origin with this one, not with the previous run's: a run whose
-- answers never reached the state (aborted, its detection given up, the
-- target disabled meanwhile) must neither hide a move nor invent one.
-- '' for states written before it (unknown: no move is inferred).
ALTER TABLE probe_states ADD COLUMN origin TEXT NOT NULL DEFAULT '';
