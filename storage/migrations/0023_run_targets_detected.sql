-- run_targets.detected: 1 once detection committed for the target in the
-- run (its answers read into its detection state, in detection's
-- transaction: diff.Apply), 0 while it has not, and for good when it never
-- will: the target left out of the run's detection (its state damaged:
-- diff's Result.Failed; disabled or removed when a missed run was detected
-- late), or the run's detection given up (storage.GiveUpDetection). Rows
-- recorded from now on are inserted with 0 (storage.FinishRun).
--
-- Rows recorded before this migration take the run's flag (runs.detected,
-- 0013): 1 for a run detected already, so that for them, as before, the
-- run-level flag decides (which of its targets were left out was not
-- recorded); 0 for a run not detected yet (a finished run its process
-- left undetected, or one never detected: aborted, running), which the
-- run that detects it late sets per target, as for a new run. The DEFAULT
-- is 1 for the ALTER TABLE alone (SQLite cannot add a NOT NULL column
-- without one); writers always name the column.
ALTER TABLE run_targets ADD COLUMN detected INTEGER NOT NULL DEFAULT 1;
UPDATE run_targets SET detected = 0 WHERE run_id IN (SELECT id FROM runs WHERE detected = 0);
