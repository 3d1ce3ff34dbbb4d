-- event_updates.kind: the event's kind once the update was recorded, so an
-- update that turned a policy_change into a model_change (a model change
-- merged into it) is found by a column, not by its detail text. '' for
-- updates recorded before this migration (readers fall back to the detail).
ALTER TABLE event_updates ADD COLUMN kind TEXT NOT NULL DEFAULT '';
