-- Issue 31: the operator console.

-- Roles of a user (user.roles_changed): the console admits users of the operator realm whose
-- row holds 'operator'. Part of the user directory projection, rebuilt with it.
ALTER TABLE users ADD COLUMN roles text[] NOT NULL DEFAULT '{}';

-- The console's user list pages through a realm's users in registration order.
CREATE INDEX users_by_registration ON users (realm_id, registered_at, user_id);

-- Console sign-ins: the product's only cookie-based sessions. The cookie holds a random token;
-- only its SHA-256 is stored. Each session is also a token family of the console client (its
-- revocation, the user's new security stamp or a lost role ends the session at once). Not a
-- read model: it cannot be rebuilt from the log, by design (a rebuild signs operators out).
CREATE TABLE console_sessions (
    session_hash  text        PRIMARY KEY,
    realm_id      text        NOT NULL,
    user_id       uuid        NOT NULL,
    family_id     uuid        NOT NULL,
    created_at    timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL
);
CREATE INDEX console_sessions_user ON console_sessions (realm_id, user_id);
