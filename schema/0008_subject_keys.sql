-- Personal data is encrypted per subject (issue 13: crypto-shredding). Each subject (a user,
-- or an email challenge stream before any user exists) has one random AES-256 data key,
-- stored here sealed under a subkey of the master key. Deleting the row makes every copy of
-- that subject's ciphertext unreadable: in events, read models and backups whose copy of
-- this table has expired. The events themselves never change.
CREATE TABLE subject_keys (
    subject     text        PRIMARY KEY,
    realm_id    text        NOT NULL,
    sealed      bytea       NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Subjects whose key was deleted: erasing again is a no-op, and a key is never created again
-- for an erased subject (a late write would otherwise make new, readable personal data).
CREATE TABLE erased_subjects (
    subject     text        PRIMARY KEY,
    realm_id    text        NOT NULL,
    erased_at   timestamptz NOT NULL DEFAULT now()
);
