-- The request's pinned headers (probes.Request.PinnedHeaders: one
-- "name: value\n" line per header that changes what the provider does,
-- e.g. anthropic-version), part of request_sha256 since headers could be
-- pinned (probes.Fingerprint). Empty for requests pinning nothing and for
-- every row recorded before: those hash over method, path and body alone,
-- exactly as they always did. Adding a column with a default rewrites
-- nothing.
ALTER TABLE observations ADD COLUMN request_pinned TEXT NOT NULL DEFAULT '';
