-- 0015: the Shared Signals transmitter (issue 30; docs/guides/shared-signals.md).
-- Both tables belong to the transmitter, a log follower with its own cursor in `checkpoints`
-- (`ssf_transmitter`): it applies stream events and fans other events out into the outbox in
-- one transaction per batch, in log order. Not a read model: delivered SETs are deleted, so
-- the outbox cannot be rebuilt from the log without sending history again.

-- Every receiver's stream as the transmitter last applied it, and who holds its push lease.
CREATE TABLE ssf_streams (
    stream_id      text        PRIMARY KEY,
    realm          text        NOT NULL,
    client_id      text        NOT NULL,
    -- The issuer the receiver discovered the transmitter by: every SET's `iss`.
    issuer         text        NOT NULL,
    method         text        NOT NULL,
    endpoint_url   text,
    -- Sealed under the master key (the receiver's credential for its push endpoint).
    push_authorization text,
    -- events_delivered: the event names (session-revoked, ...) the stream carries.
    events         text[]      NOT NULL,
    format         text        NOT NULL,
    status         text        NOT NULL,
    removed_users  uuid[]      NOT NULL DEFAULT '{}',
    lease_until    timestamptz,
    leased_by      text
);
-- One stream per receiver client.
CREATE UNIQUE INDEX ssf_streams_client ON ssf_streams (realm, client_id);

-- SETs waiting for delivery (push) or acknowledgement (poll), by stream in log order. Only
-- what is not personal: the user's id, the session's id, and the event's own fields. Names
-- and addresses are read at delivery time, so an erased user's SETs carry none.
CREATE TABLE ssf_outbox (
    stream_id       text        NOT NULL,
    seq             bigint      NOT NULL,
    jti             text        NOT NULL,
    event           text        NOT NULL,
    user_id         uuid,
    session_id      uuid,
    occurred_at     timestamptz NOT NULL,
    detail          jsonb       NOT NULL DEFAULT '{}',
    -- pending: to send (push) or to acknowledge (poll); dead: given up, for the operator.
    status          text        NOT NULL DEFAULT 'pending',
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    enqueued_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream_id, seq)
);
CREATE UNIQUE INDEX ssf_outbox_jti ON ssf_outbox (stream_id, jti);
CREATE INDEX ssf_outbox_dead ON ssf_outbox (status) WHERE status = 'dead';
