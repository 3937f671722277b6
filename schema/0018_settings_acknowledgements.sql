-- Issue 40: a settings change (realm, client, signing key) is answered only once every serving
-- instance has dropped its copy, or once the copies' age limit has passed. Each instance's
-- settings listener beats here once a second and records the last change it applied; changes
-- are numbered by a sequence and the number travels in the NOTIFY payload.
CREATE SEQUENCE settings_changes;
SELECT nextval('settings_changes');

CREATE TABLE settings_instances (
    instance_id  text        PRIMARY KEY,
    acknowledged bigint      NOT NULL,
    heartbeat_at timestamptz NOT NULL
);
