-- github_holds: "GitHub not before T". A rate limit or an outage applies to
-- more than the outbox row whose call met it: a primary or secondary rate
-- limit to the credential that called (a token, a GitHub App
-- installation) on that GitHub, an outage (5xx, timeouts) to the GitHub
-- host. Each delivery pass reads the holds of its API origin and
-- credential before it sends anything, and sends nothing before the
-- latest until (rows queued since included). api is the API root's
-- origin (scheme://host[:port]); credential is '' for an outage (every
-- credential on that host), else who calls ("token $GITHUB_TOKEN", "app
-- 1 installation 2"; never a secret). failures counts the global
-- failures in a row in that scope (an outage backs off by them, one
-- request per step); a pass that GitHub answers once the hold is over
-- deletes it.
CREATE TABLE github_holds (
    api        TEXT NOT NULL,
    credential TEXT NOT NULL,
    until      TEXT NOT NULL,
    failures   INTEGER NOT NULL,
    reason     TEXT NOT NULL,
    at         TEXT NOT NULL,
    PRIMARY KEY (api, credential)
) WITHOUT ROWID;
