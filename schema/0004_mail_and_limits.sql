-- The mail outbox (SPEC.md sections 2 and 3; issue 5). A row is written in the same
-- transaction as the event that issues a code or link, so a mail goes out if and only if
-- the challenge exists. The message (which holds the code or link) is sealed with
-- AES-256-GCM under the master key, additional data "outbox/<id>"; it is deleted once
-- delivered. Not a read model: it is work in flight, not derived from the log.
CREATE TABLE mail_outbox (
    id              uuid        PRIMARY KEY,
    realm_id        text        NOT NULL,
    recipient       text        NOT NULL,
    sealed_message  bytea       NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        integer     NOT NULL DEFAULT 0,
    -- Due time; a dispatcher that claims a row pushes it forward by a lease, so another
    -- instance does not send it meanwhile (at-least-once if a dispatcher dies mid-send).
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'dead'))
);
CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at) WHERE status = 'pending';

-- Rate limits shared by every instance (SPEC.md section 0): one row per realm, policy and
-- key (a source network, a mailbox hash, a client id), holding the GCRA "theoretical
-- arrival time". One upsert decides each request.
CREATE TABLE rate_limits (
    realm_id    text        NOT NULL,
    policy      text        NOT NULL,
    bucket_key  text        NOT NULL,
    tat         timestamptz NOT NULL,
    allowed     boolean     NOT NULL,
    PRIMARY KEY (realm_id, policy, bucket_key)
);
CREATE INDEX rate_limits_tat ON rate_limits (tat);
