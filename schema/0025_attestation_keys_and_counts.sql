-- Issue 47: genuine apps, continued.
--
-- The client directory's Play Integrity keys (applied inline from client.play_integrity_keys_set
-- and _removed): JSON {package: {sealedDecryptionKey, verificationKey}}. The decryption key is
-- sealed with the master key as in the event; nothing here is plaintext key material.
ALTER TABLE clients ADD COLUMN play_integrity jsonb NOT NULL DEFAULT '{}'::jsonb;

-- How many requests each client made with an attestation that held, and how many were refused
-- for want of one (or for a bad one), by endpoint family. Every instance counts in memory and
-- adds its counts here every few seconds and when it stops (ClientAttestationTally), so the
-- figures lag by at most that interval and cost a request nothing. Operational counts, not
-- facts: not an event, not a projection; no personal data.
CREATE TABLE client_attestation_counts (
    realm_id   text        NOT NULL,
    client_id  text        NOT NULL,
    outcome    text        NOT NULL,
    count      bigint      NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (realm_id, client_id, outcome)
);
