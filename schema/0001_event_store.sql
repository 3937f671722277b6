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
    stream_id       text        NOT NULL REFERENCES streams (id),
    stream_type     text        NOT NULL,
    stream_version  bigint      NOT NULL CHECK (stream_version > 0),
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
CREATE INDEX events_realm_type ON events (realm, type);

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

-- Appends events to one stream at an exact expected version, in one statement; all events
-- of one append share the metadata of the command that caused them.
-- p_expected = 0 means "the stream must not exist yet". On a mismatch it raises SQLSTATE
-- MG409 (the conflict the caller retries on) with the current version in DETAIL.
CREATE FUNCTION modgud_append(
    p_stream_id   text,
    p_stream_type text,
    p_realm       text,
    p_expected    bigint,
    p_types       text[],
    p_revisions   integer[],
    p_payloads    jsonb[],
    p_metadata    jsonb
) RETURNS TABLE (r_position bigint, r_tx_id xid8, r_stream_version bigint, r_recorded_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    n       integer := cardinality(p_types);
    current bigint;
BEGIN
    IF n IS NULL OR n = 0 THEN
        RAISE EXCEPTION 'an append needs at least one event' USING ERRCODE = '22023';
    END IF;
    IF p_expected = 0 THEN
        INSERT INTO streams AS s (id, type, realm, version)
        VALUES (p_stream_id, p_stream_type, p_realm, n)
        ON CONFLICT (id) DO NOTHING;
    ELSE
        UPDATE streams AS s SET version = s.version + n, updated_at = now()
        WHERE s.id = p_stream_id AND s.version = p_expected;
    END IF;
    IF NOT FOUND THEN
        SELECT s.version INTO current FROM streams AS s WHERE s.id = p_stream_id;
        RAISE EXCEPTION 'stream % is at version %, not the expected %',
            p_stream_id, coalesce(current, 0), p_expected
            USING ERRCODE = 'MG409', DETAIL = coalesce(current, 0)::text;
    END IF;
    RETURN QUERY
        INSERT INTO events AS e (stream_id, stream_type, stream_version, realm, type, revision, payload, metadata)
        SELECT p_stream_id, p_stream_type, p_expected + i, p_realm, p_types[i], p_revisions[i], p_payloads[i], p_metadata
        FROM generate_series(1, n) AS i
        ORDER BY i
        RETURNING e.position, e.tx_id, e.stream_version, e.recorded_at;
END;
$$;
