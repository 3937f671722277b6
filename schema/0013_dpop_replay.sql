-- DPoP (issue 29): each proof's jti is single use within the window a proof is acceptable
-- in, across every instance (RFC 9449 section 11.1), keyed by the key's thumbprint so that
-- one client cannot burn another's jti. UNLOGGED like rate_limits: losing it in a crash
-- forgets at most ten minutes of jtis, whose proofs carry an expired nonce or iat by then
-- for all but the last few minutes.
CREATE UNLOGGED TABLE dpop_jtis (
    jkt        text        NOT NULL,
    jti        text        NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (jkt, jti)
);
