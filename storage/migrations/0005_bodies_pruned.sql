-- Set when retention dropped an observation's stored bodies (driftprobe db
-- prune, or retention after a run): body_sha256 then names a response the
-- database no longer holds. Adding a column with a default rewrites nothing.
ALTER TABLE observations ADD COLUMN bodies_pruned INTEGER NOT NULL DEFAULT 0;
