-- Issue 43: the rest of the sign-in failures, and the users' last sign-in.
--
-- 1. The failures index (migration 0019) also holds a refused refresh of an ended family
--    (token_family.refresh_refused), the first refresh after the user's security stamp changed
--    (token_family.revoked, reason stamp), a refused passkey assertion
--    (passkey.assertion_failed) and a tripped rate limit (rate_limit.tripped). Rebuilding it
--    reads the log once, as 0019 did (docs/operations/production.md, upgrade notes).
DROP INDEX IF EXISTS events_sign_in_failures;
CREATE INDEX events_sign_in_failures ON events (realm, position)
    WHERE type IN ('challenge.attempt_failed', 'challenge.burned', 'passkey.clone_suspected', 'passkey.assertion_failed',
                   'token_family.refresh_refused', 'rate_limit.tripped')
       OR (type = 'token_family.revoked' AND payload->>'reason' IN ('reuse', 'stamp'));

-- 2. A bucket's last recorded trip: a refusal is recorded at most once per bucket in five
--    minutes (RateLimitLog.tripInterval); `just_tripped` says whether the statement that last
--    counted the bucket tripped it (what its RETURNING reads: the row's old values are not
--    visible there). The table is UNLOGGED (0007): a crash forgets it, and at worst one more
--    trip is recorded.
ALTER TABLE rate_limits
    ADD COLUMN tripped_at   timestamptz,
    ADD COLUMN just_tripped boolean NOT NULL DEFAULT false;

-- 3. Each user's last sign-in (the newest token family's auth time), for the console's
--    "sort by last sign-in". An asynchronous read model (UserSignInsProjection): no sign-in
--    waits for it; the projection daemon fills it from the start of the log after this
--    migration, and `modgud projections rebuild user_sign_ins` rebuilds it.
CREATE TABLE user_sign_ins (
    realm_id      text        NOT NULL,
    user_id       uuid        PRIMARY KEY,
    signed_in_at  timestamptz NOT NULL,
    client_id     text        NOT NULL
);
CREATE INDEX user_sign_ins_recent ON user_sign_ins (realm_id, signed_in_at DESC, user_id DESC);
