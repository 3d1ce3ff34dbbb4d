-- observations_target_probe (target_id, probe_id, run_id) served no query:
-- every read goes by run (the UNIQUE index) or by id. Each run adds one
-- entry per probe scattered across the whole index, so with history the
-- index made an insert about three times as costly (BenchmarkInsertObservationsWithHistory).
DROP INDEX IF EXISTS observations_target_probe;
