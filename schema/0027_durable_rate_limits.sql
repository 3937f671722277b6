-- Issue 67: the caps that protect a person survive a crash and a failover. The per-mailbox
-- buckets (`otp-request.mailbox`: five codes an hour to one address; `recovery-code.mailbox`)
-- move to a logged table: their rows are WAL-logged and replicated to the synchronous standby
-- like the log itself, so neither crash recovery nor a promotion starts them full again, and a
-- script cannot mail-bomb one person by waiting for a failover. The per-source and per-client
-- buckets stay in the UNLOGGED `rate_limits` (0007): they are counted on every grant, a logged
-- row there would make each grant's checks wait for a WAL flush, and what a crash forgets of
-- them is one burst per source network (docs/decisions.md, "Security state across a crash and
-- a failover"). The same columns, keys and index as `rate_limits`.
CREATE TABLE rate_limits_durable (LIKE rate_limits INCLUDING ALL);

INSERT INTO rate_limits_durable SELECT * FROM rate_limits WHERE policy LIKE '%.mailbox';
DELETE FROM rate_limits WHERE policy LIKE '%.mailbox';
