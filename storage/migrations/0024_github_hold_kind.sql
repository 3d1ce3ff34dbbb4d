-- github_holds.kind: what the wait is for, as the failure that set it was
-- classified (ghissue: rate_limit, outage, unreachable), recorded beside
-- its reason so that no reader takes the kind from the reason's text.
-- Rows recorded before this migration have none (''): ghissue reads them
-- as the release that wrote them did (a row with a credential is a rate
-- limit's; a host row whose reason starts "GitHub unreachable" an
-- unreachable GitHub's; any other an outage's). The DEFAULT is for the
-- ALTER TABLE alone (SQLite cannot add a NOT NULL column without one);
-- writers always name the column.
ALTER TABLE github_holds ADD COLUMN kind TEXT NOT NULL DEFAULT '';
