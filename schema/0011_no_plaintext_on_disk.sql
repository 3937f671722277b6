-- Issue 22: no personal data in plain text in any table, so none in the WAL, WAL archives or
-- base backups either.
--
-- The mail outbox kept each recipient's address in a plain column. The address is already
-- inside the sealed message, so the column goes; a row now names the person it is for
-- (`subject`, user:<id>) and its message is sealed under that person's data key as well as the
-- master key, so erasure shreds queued mail with the rest. The table is rebuilt rather than
-- altered: a dropped column stays in the old heap pages, a dropped table's files are deleted.
-- Rows queued before this migration keep only the master-key layer (subject NULL).
CREATE TABLE mail_outbox_sealed (
    id              uuid        PRIMARY KEY,
    realm_id        text        NOT NULL,
    subject         text,
    sealed_message  bytea       NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'dead'))
);
INSERT INTO mail_outbox_sealed (id, realm_id, subject, sealed_message, created_at, attempts, next_attempt_at, last_error, status)
SELECT id, realm_id, NULL, sealed_message, created_at, attempts, next_attempt_at, last_error, status FROM mail_outbox;
DROP TABLE mail_outbox;
ALTER TABLE mail_outbox_sealed RENAME TO mail_outbox;
ALTER INDEX mail_outbox_sealed_pkey RENAME TO mail_outbox_pkey;
CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at) WHERE status = 'pending';

-- Rate-limit buckets were keyed by the client's address. Keys are now keyed hashes; the old
-- buckets (plain addresses) are emptied, which forgets at most one window of counting.
TRUNCATE rate_limits;

-- Passkey names are labels users type ("Ada's iPhone"): from now on they are sealed under the
-- owner's data key. Events that hold a name in plain text count as legacy, so `serve` warns
-- until `modgud privacy seal-legacy --apply` has sealed them (and rebuilt the passkeys table).
UPDATE personal_data_sealing SET legacy_events = legacy_events + legacy.n, sealed_at = NULL
FROM (SELECT count(*) AS n FROM events
      WHERE type IN ('passkey.enrolled', 'passkey.renamed') AND payload->>'displayName' NOT LIKE 'pd1.%') legacy
WHERE legacy.n > 0;
