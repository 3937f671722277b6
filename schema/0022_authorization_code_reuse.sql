-- Issue 45: a redeemed authorization code is marked, not deleted, until housekeeping prunes it
-- an hour after its expiry, so that a second redemption is recognised as reuse and the sign-in
-- it stands for is revoked (RFC 9700 section 4.2.4; RFC 6749 section 4.1.2; OWASP ASVS 10.4.2).
-- The first redemption sets `redeemed_at`; the row lock decides which of two is first.
ALTER TABLE authorization_codes ADD COLUMN redeemed_at timestamptz;
