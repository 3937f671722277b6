-- Issue 48: which user a provider's account signs in. One row per linked (provider, subject):
-- the subject is a blind index (HMAC under the realm's index key), never the provider's `sub`
-- itself, which lives sealed in the user's `user.identity_linked` event. Written in the
-- transaction that links (a sign-up, a link), deleted by unlinking and by erasure, like the
-- personal data keys beside it: not a projection (a rebuild could not compute the index from
-- sealed events), and nothing here outlives the person's erasure.
--
-- The primary key decides races: two first sign-ins of one provider account make one user.
CREATE TABLE federated_identities (
    realm_id      text        NOT NULL,
    provider      text        NOT NULL,
    subject_index text        NOT NULL,
    user_id       uuid        NOT NULL,
    linked_at     timestamptz NOT NULL,
    PRIMARY KEY (realm_id, provider, subject_index),
    CONSTRAINT federated_identities_one_per_provider UNIQUE (realm_id, user_id, provider)
);
