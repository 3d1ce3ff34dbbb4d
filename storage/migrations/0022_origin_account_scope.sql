-- An OpenAI target's origin now names the account it speaks for (its
-- organization and project: "https://api.openai.com organization=org-1"),
-- since account-level policy differs per account. Its detection state and
-- event rows recorded before carry the endpoint's plain origin. The
-- targets listed here were recorded before: the first run of each that can
-- speak for its state, at the state's endpoint with an account now named,
-- adopts the state and the target's event rows at that origin (the same
-- endpoint and account, now named: not a move). That run removes the
-- target from the list whatever it finds, so an account named later is a
-- move, as any account switch is.
CREATE TABLE origin_scope_unnamed (
    target_id INTEGER PRIMARY KEY REFERENCES targets (id)
);
INSERT INTO origin_scope_unnamed (target_id) SELECT id FROM targets WHERE provider = 'openai';
