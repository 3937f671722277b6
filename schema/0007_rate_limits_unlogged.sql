-- Rate-limit buckets need no durability (issue 12): a bucket lost in a crash or a failover
-- only forgets a few seconds of counting, which refills anyway. As an UNLOGGED table its
-- updates write no WAL, so a transaction that only counts commits without waiting for a WAL
-- flush, and the buckets a popular client shares stop queueing behind fsync. After a crash
-- PostgreSQL empties the table; standbys do not have it (instances use the primary only).
ALTER TABLE rate_limits SET UNLOGGED;

-- One statement counts all of a request's buckets: each row carries its policy's GCRA
-- emission interval and tolerance, so the conflict branch can read them from EXCLUDED.
ALTER TABLE rate_limits
    ADD COLUMN interval_seconds  float8 NOT NULL DEFAULT 0,
    ADD COLUMN tolerance_seconds float8 NOT NULL DEFAULT 0;
