-- The tamper-evident audit log (issue 28; docs/operations/audit-log.md): every event a leaf
-- of its realm's RFC 9162 Merkle tree, integrated after commit by the audit integrator.

-- One row per leaf: the event at `position` hashed as `AuditLeaf` encodes it. Kept when the
-- event row is removed or rewritten (see audit_redactions).
CREATE TABLE audit_leaves (
    realm      text   NOT NULL,
    leaf_index bigint NOT NULL,
    position   bigint NOT NULL,
    hash       bytea  NOT NULL,
    PRIMARY KEY (realm, leaf_index)
);
CREATE UNIQUE INDEX audit_leaves_position ON audit_leaves (position);

-- The hash of every completed perfect subtree above the leaves (level >= 1), so that any
-- proof for any size the tree reached is a handful of lookups.
CREATE TABLE audit_nodes (
    realm      text     NOT NULL,
    level      smallint NOT NULL,
    node_index bigint   NOT NULL,
    hash       bytea    NOT NULL,
    PRIMARY KEY (realm, level, node_index)
);

-- Each realm's tree size as the integrator left it: where the next leaf goes, and which
-- realms have leaves no checkpoint covers yet. A convenience the verifier never trusts.
CREATE TABLE audit_tree_heads (
    realm      text PRIMARY KEY,
    tree_size  bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Signed checkpoints (C2SP tlog-checkpoint in a C2SP signed note).
CREATE TABLE audit_checkpoints (
    realm     text        NOT NULL,
    tree_size bigint      NOT NULL,
    root_hash bytea       NOT NULL,
    signed_at timestamptz NOT NULL,
    note      text        NOT NULL,
    PRIMARY KEY (realm, tree_size)
);

-- One Ed25519 log key per realm, sealed under the master key; never used for tokens.
CREATE TABLE audit_log_keys (
    realm              text PRIMARY KEY,
    key_name           text        NOT NULL,
    public_key         bytea       NOT NULL,
    sealed_private_key bytea       NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now()
);

-- What retention pruning and the legacy sealing rewrite did to event rows that are leaves:
-- `removed` (the row is gone) or `rewritten` (the row now hashes to `new_hash`). Written in
-- the transaction that changes the row, beside an `AuditLogRedacted` event naming the
-- operation, so the log shows that data was removed and when.
CREATE TABLE audit_redactions (
    position  bigint      NOT NULL,
    realm     text        NOT NULL,
    kind      text        NOT NULL CHECK (kind IN ('removed', 'rewritten')),
    new_hash  bytea,
    operation text        NOT NULL,
    at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_redactions_position ON audit_redactions (position);

-- Append-only by construction: a mistaken UPDATE or DELETE fails. (Whoever owns the tables
-- can drop a trigger; checkpoints held outside the database catch that.)
CREATE FUNCTION modgud_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only (%)', TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_leaves_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_leaves
    FOR EACH STATEMENT EXECUTE FUNCTION modgud_audit_append_only();
CREATE TRIGGER audit_nodes_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION modgud_audit_append_only();
CREATE TRIGGER audit_checkpoints_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION modgud_audit_append_only();
CREATE TRIGGER audit_redactions_append_only BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_redactions
    FOR EACH STATEMENT EXECUTE FUNCTION modgud_audit_append_only();
