-- Issue 43: a realm's recent sign-in failures for the console (wrong or burned codes and
-- links, a spent refresh token presented again, a passkey whose counter went backwards). A
-- partial index holds only those events, so appends of every other event only test the
-- predicate, and the console reads the failures of a realm newest first without a scan of
-- the log. Building it reads the log once (appends wait meanwhile: seconds per million
-- events; docs/operations/production.md, upgrade notes).
CREATE INDEX events_sign_in_failures ON events (realm, position)
    WHERE type IN ('challenge.attempt_failed', 'challenge.burned', 'passkey.clone_suspected')
       OR (type = 'token_family.revoked' AND payload->>'reason' = 'reuse');
