-- run_targets.model: the model a target's requests named in a run (its
-- configured model then). targets.model holds only the current
-- configuration, which every run overwrites, so a past run read after the
-- target moved to another model (compare's fallback to the last complete
-- run, a diff across the switch) was labelled with the new one. '' for runs
-- recorded before this migration (unknown).
ALTER TABLE run_targets ADD COLUMN model TEXT NOT NULL DEFAULT '';
