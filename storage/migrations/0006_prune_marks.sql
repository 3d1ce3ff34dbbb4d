-- How far retention has pruned a run: '' (not at all), 'bodies' (every
-- body dropped but pinned ones), 'observations' (every observation deleted
-- but pinned ones). A run pruned to the level its age asks for is not
-- scanned again, so a prune costs what is new, not the whole history.
ALTER TABLE runs ADD COLUMN pruned TEXT NOT NULL DEFAULT '';

-- Observations of pruned runs that retention kept only because they were
-- pinned (event evidence, detection baselines and candidates). Each prune
-- re-checks these, and only these, against the current pins.
CREATE TABLE pruned_kept (
    observation_id INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL
);
