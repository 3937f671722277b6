-- 0003: identity read models, written inline in the append transaction (they must be
-- current the moment a command answers). Every row carries its realm.

-- Realm by host (a host belongs to at most one realm), and the realm's settings.
CREATE TABLE realms (
    realm_id    text        PRIMARY KEY,
    settings    jsonb       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE realm_hosts (
    host        text        PRIMARY KEY,
    realm_id    text        NOT NULL
);
CREATE INDEX realm_hosts_realm ON realm_hosts (realm_id);

-- Public signing keys (the private parts live encrypted in signing_key_secrets, not here).
CREATE TABLE signing_keys (
    realm_id    text        NOT NULL,
    kid         text        NOT NULL,
    algorithm   text        NOT NULL,
    public_jwk  jsonb       NOT NULL,
    rotated_at  timestamptz NOT NULL,
    PRIMARY KEY (realm_id, kid)
);

-- Client by id.
CREATE TABLE clients (
    realm_id    text        NOT NULL,
    client_id   text        NOT NULL,
    settings    jsonb       NOT NULL,
    secret_hash text,
    enabled     boolean     NOT NULL DEFAULT true,
    PRIMARY KEY (realm_id, client_id)
);

-- User by id and by normalized email (unique among the realm's live accounts).
CREATE TABLE users (
    realm_id        text        NOT NULL,
    user_id         uuid        PRIMARY KEY,
    email           text        NOT NULL,
    email_confirmed boolean     NOT NULL,
    username        text,
    first_name      text,
    last_name       text,
    status          text        NOT NULL DEFAULT 'active',
    security_stamp  text        NOT NULL,
    totp_enabled    boolean     NOT NULL DEFAULT false,
    registered_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email ON users (realm_id, email) WHERE status <> 'deleted';

-- Token families and their tokens, by hash (tokens themselves are never stored). Each table
-- has exactly one owning projection, so that each can be rebuilt alone.
CREATE TABLE token_families (
    family_id       uuid        PRIMARY KEY,
    realm_id        text        NOT NULL,
    client_id       text        NOT NULL,
    user_id         uuid,
    scopes          text[]      NOT NULL,
    audiences       text[]      NOT NULL,
    -- The user's stamp at sign-in: tokens are live only while it equals users.security_stamp.
    security_stamp  text,
    revoked_reason  text,
    started_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX token_families_user ON token_families (realm_id, user_id);
CREATE TABLE access_tokens (
    token_hash  text        PRIMARY KEY,
    realm_id    text        NOT NULL,
    family_id   uuid        NOT NULL,
    client_id   text        NOT NULL,
    user_id     uuid,
    scopes      text[]      NOT NULL,
    audiences   text[]      NOT NULL,
    format      text        NOT NULL,
    expires_at  timestamptz NOT NULL,
    revoked     boolean     NOT NULL DEFAULT false
);
CREATE INDEX access_tokens_family ON access_tokens (family_id);
CREATE INDEX access_tokens_user ON access_tokens (realm_id, user_id);
CREATE TABLE refresh_tokens (
    token_hash  text        PRIMARY KEY,
    realm_id    text        NOT NULL,
    family_id   uuid        NOT NULL,
    expires_at  timestamptz NOT NULL,
    spent       boolean     NOT NULL DEFAULT false
);
CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id);

-- Private signing keys, sealed with AES-256-GCM under the master key from configuration
-- (nonce | ciphertext | tag; additional data "realm/kid"). Written in the same transaction
-- as the realm.signing_key_rotated event, which carries only the public key. Not a read
-- model: it cannot be rebuilt from the log, by design.
CREATE TABLE signing_key_secrets (
    realm_id    text        NOT NULL,
    kid         text        NOT NULL,
    sealed      bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (realm_id, kid)
);
