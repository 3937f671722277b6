-- Issue 70: token rows are pruned once no request can use them (TokenTables.prune), found by
-- their expiry. Tokens are written in nearly the order they expire, so a BRIN index (a few
-- pages, summarised per block range) finds them at almost no cost to the insert, where a
-- b-tree would add one more index entry to every grant.
CREATE INDEX access_tokens_expiry ON access_tokens USING brin (expires_at);
CREATE INDEX refresh_tokens_expiry ON refresh_tokens USING brin (expires_at);
-- No query reads access tokens by user (a user's tokens are found by their families), so this
-- index cost every grant an entry for nothing.
DROP INDEX access_tokens_user;
