-- The scores a score-drift event saw move, per probe: "key=before->after"
-- joined by ";", largest move first (provider score keys, as the signals
-- name them). Empty for other kinds, and for events recorded before.
ALTER TABLE event_probes ADD COLUMN score_moves TEXT NOT NULL DEFAULT '';
