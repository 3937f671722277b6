-- Issue 40: a DPoP proof accepted before a crash or a failover must be refused after it
-- (RFC 9449 section 11.1). As an UNLOGGED table dpop_jtis was emptied by crash recovery and
-- absent on a promoted standby, so a proof used once could be replayed for the rest of its
-- window (up to ten minutes with a server nonce). A logged table costs each DPoP request a
-- WAL record and a commit flush (measured in BENCHMARKS.md, "Issue 40"); rate_limits stays
-- UNLOGGED (a failover only forgets a few seconds of counting; docs/decisions.md).
ALTER TABLE dpop_jtis SET LOGGED;
