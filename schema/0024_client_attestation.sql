-- Issue 47: genuine apps. The attester's Apple App Attest keys: one row per key an app
-- instance attested (the key id is SHA-256 of the key, Apple's `keyId`), holding its public key
-- and the highest assertion counter seen. A replayed attestation finds its key taken (the
-- primary key decides), and an assertion is accepted only if it raises the counter, decided by
-- one conditional UPDATE (two racing assertions with one counter: one wins).
--
-- No personal data: a key says which app instance, not which person.
CREATE TABLE app_attest_keys (
    realm_id     text        NOT NULL,
    key_id       bytea       NOT NULL,
    client_id    text        NOT NULL,
    app_id       text        NOT NULL,
    environment  text        NOT NULL,
    public_key   bytea       NOT NULL,
    counter      bigint      NOT NULL DEFAULT 0,
    attested_at  timestamptz NOT NULL,
    last_used_at timestamptz NOT NULL,
    PRIMARY KEY (realm_id, key_id)
);

-- The attested app instance an access token went to (`client_attestation` in introspection):
-- JSON {platform, app, jkt}, NULL when the request was not attested.
ALTER TABLE access_tokens ADD COLUMN attestation text;
