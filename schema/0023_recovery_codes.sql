-- Issue 46: recovery codes. A person's current set is named by their stream
-- (`user.recovery_codes_generated` carries the set's id, never a code); the codes themselves
-- live here as slow hashes (PBKDF2-SHA256 under the set's salt), so the event log holds nothing
-- a code can be recovered from and erasure deletes them with the rest of the person.
--
-- A code is spent by `modgud_spend_recovery_code`, in the transaction that appends the
-- sign-in it gives: the row lock decides which of two redemptions of one code wins, and the
-- loser's transaction fails whole (nothing written, no tokens).
CREATE TABLE recovery_codes (
    realm_id   text        NOT NULL,
    user_id    uuid        NOT NULL,
    set_id     uuid        NOT NULL,
    salt       bytea       NOT NULL,
    code_hash  text        NOT NULL,
    used_at    timestamptz,
    PRIMARY KEY (realm_id, user_id, set_id, code_hash)
);

CREATE FUNCTION modgud_spend_recovery_code(realm text, person uuid, code_set uuid, hash text, at timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE recovery_codes SET used_at = at
    WHERE realm_id = realm AND user_id = person AND set_id = code_set AND code_hash = hash AND used_at IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no such unused recovery code' USING ERRCODE = 'MGD02';
    END IF;
END
$$;
