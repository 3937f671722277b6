-- Issue 69: the device authorization grant (RFC 8628). One row per device authorization,
-- written in the transaction that appends its `device_authorization.requested` event, so that
-- a person's typed user code finds it and a device's polls are paced. The user code is kept
-- only as an HMAC under a key derived from the master key (its space is small: a plain hash
-- would be reversed by enumeration); the device code's secret is in the event as a SHA-256
-- hash and nowhere here. `next_poll_at` and `interval_seconds` pace the polls (section 3.5's
-- `slow_down`): one conditional UPDATE decides each poll, so two instances cannot both let a
-- too-early poll through. Rows live ten minutes; housekeeping deletes them an hour after.
-- This is write-side state, like `authorization_codes`: the aggregate's events decide
-- approval and redemption, and nothing here is rebuilt from the log. `device_name` (what the
-- device says it is) and `network` (the request's address, coarsened to a /24 or /48) are
-- shown to the person approving: personal data with no subject yet, so they live only here,
-- never in the log, and go with the row.
CREATE TABLE device_authorizations (
    realm_id text NOT NULL,
    authorization_id uuid NOT NULL,
    user_code_hash text NOT NULL,
    client_id text NOT NULL,
    expires_at timestamptz NOT NULL,
    interval_seconds integer NOT NULL,
    next_poll_at timestamptz NOT NULL,
    device_name text,
    network text,
    PRIMARY KEY (realm_id, authorization_id)
);
CREATE UNIQUE INDEX device_authorizations_user_code ON device_authorizations (realm_id, user_code_hash);
CREATE INDEX device_authorizations_expiry ON device_authorizations (expires_at);
