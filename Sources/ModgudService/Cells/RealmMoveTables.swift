import EventStorePostgres

/// What a realm move does with each table of a cell (issue 71; docs/decisions.md, "The live
/// move"). `RealmMoveTablesTests` reads every table of a migrated database and fails on one that
/// is in no list, so a new table is classified when it is added, not discovered by a lost row.
enum RealmMoveTables {
    /// A table whose rows of the realm are copied from the fenced source: state that is not
    /// derived from events (keys, codes, sessions, outboxes, counters).
    struct Copied: Sendable, Equatable {
        enum Owner: Sendable, Equatable {
            /// The table has the realm in this column.
            case column(String)
            /// `ssf_outbox`: rows of the realm's SSF streams.
            case signalStream
        }

        var name: String
        var owner: Owner
    }

    /// The log: replicated by the publication, appended to the target in the source's order.
    static let moved = ["events"]

    /// Written by the move beside each run of events (`streams`), by the inline projections
    /// applied to the moved events, or by the target's own asynchronous projections and audit
    /// log integrator as the moved events reach them.
    static var derived: [String] {
        ["streams", "audit_leaves", "audit_nodes", "audit_tree_heads", "audit_checkpoints"] + ProjectionCatalog.all.flatMap(\.tables)
    }

    static let copied: [Copied] = [
        "signing_key_secrets", "mail_outbox", "subject_keys", "erased_subjects", "console_sessions", "authorization_sessions",
        "authorization_codes", "recovery_codes", "app_attest_keys", "client_attestation_counts", "federated_identities",
        "device_authorizations", "rate_limits_durable",
    ].map { Copied(name: $0, owner: .column("realm_id")) } + [
        Copied(name: "audit_log_keys", owner: .column("realm")),
        Copied(name: "audit_redactions", owner: .column("realm")),
        // The outbox before its streams: its rows are found through them.
        Copied(name: "ssf_outbox", owner: .signalStream),
        Copied(name: "ssf_streams", owner: .column("realm")),
    ]

    /// Keys the target's projections read as they take the moved events: a user's subject key
    /// (its address's blind index, `users`) and the realm's audit log key (checkpoints). Their
    /// new rows are added before each drain, so no event reaches the target before its key.
    static let keys: [Copied] = copied.filter { ["subject_keys", "audit_log_keys"].contains($0.name) }

    /// Tables whose trigger refuses UPDATE and DELETE (the audit log, schema 0012).
    static let appendOnly = ["audit_leaves", "audit_nodes", "audit_checkpoints", "audit_redactions"]

    /// Not the realm's, or not moved: the cell's own bookkeeping, global lists, and
    /// `rate_limits` (UNLOGGED: the realm's buckets start a fresh window in the target).
    /// `dpop_jtis` has no realm column; its unexpired rows are all copied (`RealmMoveSQL.liveJTIs`).
    static let notMoved = [
        "checkpoints", "projection_failures", "schema_migrations", "settings_instances", "personal_data_sealing",
        "android_attestation_status", "android_attestation_status_imports", "rate_limits", "dpop_jtis",
    ]

    /// The tables the fence guards in the source: the log and every copied table (the derived
    /// ones are written only in a transaction that appends events).
    static var fenced: [(table: String, column: String)] {
        [("events", "realm")] + copied.compactMap { copied in
            guard case .column(let column) = copied.owner else { return nil }
            return (copied.name, column)
        }
    }
}
