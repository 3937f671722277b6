-- Issue 69: OpenID Connect Native SSO for Mobile Apps (draft 07). A sign-in that issued a
-- device secret is a device session; a token exchange by a teammate app starts a family that
-- joins it. `device_session` is the session (the token family that issued the secret) of a
-- family in one; `device_secret_hash` is the SHA-256 of the secret, base64url, on the
-- session's own family only: the exchange and the sign-out find the session by it. The secret
-- itself is never stored. Both belong to the tokens projection, and a rebuild fills them from
-- `token_family.started`.
ALTER TABLE token_families ADD COLUMN device_session uuid, ADD COLUMN device_secret_hash text;
CREATE UNIQUE INDEX token_families_device_secret ON token_families (device_secret_hash) WHERE device_secret_hash IS NOT NULL;
CREATE INDEX token_families_device_session ON token_families (device_session) WHERE device_session IS NOT NULL;
