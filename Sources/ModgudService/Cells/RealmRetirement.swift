import PQ

/// Deletes what a cell keeps of a realm it no longer serves (issue 71: "retire the realm's rows
/// in A later by a CLI command"): after a move, the source's copy; after an abandoned move, the
/// target's partial one. Refused while the directory places the realm in that cell.
public enum RealmRetirement {
    /// Every table that holds a realm's rows, with the column that names it.
    static var realmTables: [RealmMoveTables.Copied] {
        let byRealm: Set = ["events", "streams", "log_statistics", "audit_leaves", "audit_nodes", "audit_tree_heads", "audit_checkpoints"]
        let owned = (RealmMoveTables.moved + RealmMoveTables.derived).map {
            RealmMoveTables.Copied(name: $0, owner: .column(byRealm.contains($0) ? "realm" : "realm_id"))
        }
        // Children before parents: ssf_outbox is found through ssf_streams.
        return RealmMoveTables.copied + owned
    }

    /// Retires `realm` in `cell`; returns the rows deleted.
    public static func retire(realm: String, cell: String, directory: PQPool) async throws -> Int {
        let map = try await CellDirectory.read(pool: directory)
        guard let holder = map.cells.first(where: { $0.name == cell }) else {
            throw ServiceRefusal(.notFound, "Cell.NotFound", "No cell is named \(cell).")
        }
        guard let placement = map.placements[realm], placement.cell != cell else {
            throw ServiceRefusal(
                .conflict, "Realm.Serving", "The directory places realm \(realm) in cell \(cell) (or nowhere): it cannot be retired there.")
        }
        let pool = RealmMove.pool(holder.databaseURL)
        defer { Task { await pool.close() } }
        let names = RealmMove.names(for: realm)
        if try await pool.query(RealmMoveSQL.databaseExists(names.staging)).first!.decode(Int.self, at: 0) > 0 {
            // An abandoned move into this cell: its subscription, and the slot in the cell it read.
            let staging = RealmMove.pool(PQConfiguration.replacingDatabase(in: holder.databaseURL, with: names.staging))
            try await RealmMove.dropSubscription(names.replication, staging: staging)
            await staging.close()
            _ = try await pool.query(RealmMoveSQL.dropDatabase(names.staging))
            if let serving = map.cells.first(where: { $0.name == placement.cell }) {
                let source = RealmMove.pool(serving.databaseURL)
                defer { Task { await source.close() } }
                try await RealmMove.dropSlot(names.replication, on: source)
            }
        }
        try await RealmMove.dropSlot(names.replication, on: pool)
        _ = try await pool.query(RealmMoveSQL.dropPublication(names.replication))
        // One transaction: the fence's triggers go with the rows they guarded.
        var statements = RealmMoveTables.fenced.flatMap { RealmMoveSQL.unfence(table: $0.table, tag: names.fence) }
        statements += RealmMoveSQL.auditAppendOnly(enabled: false)
        statements += realmTables.map { RealmMoveSQL.deleteRows(of: $0, realm: realm) }
        statements += RealmMoveSQL.auditAppendOnly(enabled: true)
        let finalStatements = statements
        let results = try await pool.withConnection { try await $0.pipelineInPlace(finalStatements) }
        return results.reduce(0) { $0 + $1.affectedRows }
    }
}
