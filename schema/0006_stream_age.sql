-- 0006: finding one-shot streams by age, for log retention (`modgud events prune`).
-- (type, created_at) never change after a stream is created, so appends keep their HOT
-- updates of the stream row; each new stream adds one index entry.
CREATE INDEX streams_type_age ON streams (type, created_at);
