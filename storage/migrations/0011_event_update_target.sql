-- The target an event update is about (a target joining, adding probes,
-- flipping back), so a GitHub comment can list that target's probes
-- without reading it out of the detail text. 0: not recorded (updates
-- written before this migration; readers fall back to the detail).
ALTER TABLE event_updates ADD COLUMN target_id INTEGER NOT NULL DEFAULT 0;
