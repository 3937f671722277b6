-- The passkey directory (SPEC.md section 4; issue 6), owned by the inline projection
-- `passkey_directory`: one row per live passkey, found by the hash of its WebAuthn
-- credential id (never a scan of all credentials), listed per user. A deleted passkey's
-- row is removed, so it can neither be listed nor verify.
CREATE TABLE passkeys (
    passkey_id      uuid        PRIMARY KEY,
    realm_id        text        NOT NULL,
    user_id         uuid        NOT NULL,
    -- The WebAuthn credential id, base64url (public; listed in excludeCredentials).
    credential_id   text        NOT NULL,
    -- SHA-256 of the raw credential id, base64url.
    credential_hash text        NOT NULL,
    rp_id           text        NOT NULL,
    display_name    text        NOT NULL,
    created_at      timestamptz NOT NULL,
    last_used_at    timestamptz
);
-- A credential id is registered once per realm: a second enrollment fails the append.
CREATE UNIQUE INDEX passkeys_credential ON passkeys (realm_id, credential_hash);
CREATE INDEX passkeys_user ON passkeys (realm_id, user_id);
