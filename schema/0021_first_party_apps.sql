-- Issue 45: OAuth 2.0 for First-Party Applications (draft-ietf-oauth-first-party-apps), the
-- Authorization Challenge Endpoint. Two short-lived side tables, pruned by housekeeping; the
-- sign-ins themselves are the native grants' events.
--
-- 1. An `auth_session`: the state between a client's challenge requests. Found by the SHA-256
--    of the session token the client holds. What it says (the address asked for, PKCE, scope,
--    a code held for the second factor) is sealed with a key derived from that token, so the
--    table holds nothing readable without it. `jkt` binds it to the DPoP key of the request
--    that began it.
CREATE TABLE authorization_sessions (
    session_hash text        PRIMARY KEY,
    realm_id     text        NOT NULL,
    client_id    text        NOT NULL,
    jkt          text,
    sealed       bytea       NOT NULL,
    expires_at   timestamptz NOT NULL
);
CREATE INDEX authorization_sessions_expiry ON authorization_sessions (expires_at);

-- 2. An authorization code: the token response of the sign-in it stands for, sealed with a key
--    derived from the code (which is stored only as its SHA-256), the PKCE challenge it must be
--    redeemed with (RFC 7636), and the DPoP key it is bound to (RFC 9449 section 10). Redeemed
--    by deleting its row: exactly one redemption wins.
CREATE TABLE authorization_codes (
    code_hash      text        PRIMARY KEY,
    realm_id       text        NOT NULL,
    client_id      text        NOT NULL,
    code_challenge text        NOT NULL,
    jkt            text,
    sealed         bytea       NOT NULL,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX authorization_codes_expiry ON authorization_codes (expires_at);
