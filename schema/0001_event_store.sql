-- 0001: the event store (DESIGN.md section 2).
-- Forward-only. `modgud migrate` records each applied file with its checksum.

-- One row per stream: its current version is the concurrency guard.
CREATE TABLE streams (
    id          text        PRIMARY KEY,
    type        text        NOT NULL,
    realm       text        NOT NULL,
    version     bigint      NOT NULL CHECK (version > 0),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX streams_realm ON streams (realm, type);

-- The log. `position` is handed out at insert and becomes visible at commit, so readers of
-- the whole log order by (tx_id, position) and admit only transactions below the snapshot's
-- xmin (see modgud_read_log below): no committed event is ever passed over.
CREATE TABLE events (
    position        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tx_id           xid8        NOT NULL DEFAULT pg_current_xact_id(),
    stream_id       text        NOT NULL,
    stream_type     text        NOT NULL,
    -- The append statement writes -1 here when the stream was not at the expected version,
    -- so a conflict fails the whole append (and everything pipelined with it) with this
    -- constraint's name, which the store reports as a version conflict.
    stream_version  bigint      NOT NULL CONSTRAINT events_expected_version CHECK (stream_version > 0),
    realm           text        NOT NULL,
    type            text        NOT NULL,
    revision        integer     NOT NULL DEFAULT 1,
    payload         jsonb       NOT NULL,
    metadata        jsonb       NOT NULL DEFAULT '{}',
    recorded_at     timestamptz NOT NULL DEFAULT now(),
    -- The backstop: two writers can never both own version n of a stream.
    UNIQUE (stream_id, stream_version)
);
CREATE INDEX events_log ON events (tx_id, position);
-- Deliberately no foreign key to streams and no (realm, type) index: events are only written
-- by the append statement, which writes the stream row in the same statement, and each of
-- the two cost about a third of the append rate (see README, "Event store performance").

-- Where each asynchronous projection has got to in the log.
CREATE TABLE checkpoints (
    projection  text        PRIMARY KEY,
    tx_id       xid8        NOT NULL DEFAULT '0',
    position    bigint      NOT NULL DEFAULT 0,
    applied     bigint      NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Events a projection could not apply. After N attempts the event is parked (skipped) and
-- the projection continues; operators see it here and in `modgud projections status`.
CREATE TABLE projection_failures (
    projection      text        NOT NULL,
    position        bigint      NOT NULL,
    tx_id           xid8        NOT NULL,
    event_type      text        NOT NULL,
    attempts        integer     NOT NULL,
    last_error      text        NOT NULL,
    parked          boolean     NOT NULL DEFAULT false,
    first_failed_at timestamptz NOT NULL DEFAULT now(),
    last_failed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (projection, position)
);
