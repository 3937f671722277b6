-- Issue 70: token rows are written once and never updated, and pruned once no request can
-- use them (TokenTables.prune).
--
-- A revocation is one row, the family's: every reader of a token joins its family and checks
-- `revoked_reason`, so `access_tokens.revoked` and `refresh_tokens.spent` repeated what the
-- family says (and whether a refresh token is spent, the family's stream decides). Each
-- refresh updated the spent token's row, and each revocation every row of the family, through
-- the by-family index on access tokens, which nothing else reads.
ALTER TABLE access_tokens DROP COLUMN revoked;
ALTER TABLE refresh_tokens DROP COLUMN spent;
DROP INDEX access_tokens_family;
-- No query reads access tokens by user (a user's tokens are found by their families).
DROP INDEX access_tokens_user;
-- Pruning finds rows by expiry. Tokens are written in nearly the order they expire, so a BRIN
-- index (a few pages, one summary per block range) finds them at almost no cost to the
-- insert, where a b-tree would add one more index entry to every grant.
CREATE INDEX access_tokens_expiry ON access_tokens USING brin (expires_at);
CREATE INDEX refresh_tokens_expiry ON refresh_tokens USING brin (expires_at);
