-- 0009: the users read model holds no address or name in plaintext (issue 13). `email` and
-- the name columns hold the sealed text of the events (legacy rows: the plaintext, until
-- `modgud privacy seal-legacy` rewrites the log and the projection is rebuilt); `email_key`
-- is how an address is found: its blind index, or `plain:<address>` for a legacy row. An
-- erased user keeps a tombstone row: status 'erased', every personal column null.
--
-- The blind index is not in the log: it is kept beside the subject's key, written with it
-- and deleted with it, and the projection copies it from there. After erasure nothing in the
-- log links the account to its address (not even when the address signs up again).
ALTER TABLE subject_keys ADD COLUMN email_index text;
CREATE INDEX subject_keys_email_index ON subject_keys (realm_id, email_index) WHERE email_index IS NOT NULL;
ALTER TABLE users ADD COLUMN email_key text;
UPDATE users SET email_key = 'plain:' || email;
ALTER TABLE users ALTER COLUMN email DROP NOT NULL;
DROP INDEX users_email;
CREATE UNIQUE INDEX users_email_key ON users (realm_id, email_key) WHERE status NOT IN ('deleted', 'erased');

-- Operator state of the one-time rewrite of events written before sealing began.
CREATE TABLE personal_data_sealing (
    singleton     boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    legacy_events bigint      NOT NULL,
    sealed_at     timestamptz
);
INSERT INTO personal_data_sealing (legacy_events)
SELECT count(*) FROM events WHERE type IN ('user.registered', 'user.profile_changed', 'challenge.issued');

-- Fails the transaction it runs in when a subject has no key (erased, or never made): a
-- registration code commits its user only while the key sealing the address still exists
-- (an address erased while its code was out cannot sign up with that code). FOR SHARE
-- makes an erasure running at that moment wait for the registration to commit.
CREATE FUNCTION modgud_require_subject_key(wanted text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM subject_keys WHERE subject = wanted FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'subject % has no key', wanted USING ERRCODE = 'MGD01';
    END IF;
END
$$;
