import EventStorePostgres
import EventSourcing
import PQ

extension RealmMove {
    /// The source's horizon and its WAL position after it.
    func horizonAndLSN(_ pools: Pools) async throws -> (UInt64, String) {
        let row = try await pools.source.query(EventStoreSQL.horizonAndWALPosition).first!
        return (try row.decode(PQTransactionID.self, at: 0).rawValue, try row.decode(String.self, at: 1))
    }

    func slot(_ pools: Pools, confirmed lsn: String) async throws -> (lag: Int64?, confirmed: Bool) {
        guard let row = try await pools.source.query(RealmMoveSQL.slot(names.replication, confirmed: lsn)).first else { return (nil, false) }
        return (try row.decode(Int64?.self, at: 0), try row.decode(Bool.self, at: 1))
    }

    /// Waits until the subscriber has confirmed `lsn` (the slot's `confirmed_flush_lsn`):
    /// every transaction the source committed before it is then in the staging database.
    func waitConfirmed(_ lsn: String, _ pools: Pools, limit: Duration) async throws {
        let deadline = ContinuousClock.now + limit
        while try await !slot(pools, confirmed: lsn).confirmed {
            guard ContinuousClock.now < deadline else {
                throw ServiceRefusal(
                    .unavailable, "Move.NotConfirmed",
                    "The subscription in cell \(target.name) did not confirm the source's WAL position \(lsn) within \(limit); the realm stays in cell \(source.name).")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Appends the staged events below `horizon` (nil: all of them) to the target, in the
    /// source's order, each run in one transaction with the inline projections and the
    /// streams' versions, as an append writes them; then removes them from staging. An event
    /// the target already holds (a move resumed after a crash between the two) is skipped.
    func drain(below horizon: UInt64?, _ transfer: inout Transfer) async throws -> Int {
        let staging = transfer.pools.stagingPool, target = transfer.pools.target
        var appended = 0
        while true {
            let events = try await staging.query(RealmMoveSQL.staged(below: horizon, limit: 2000)).rows.map(RealmMoveEvent.init(row:))
            guard !events.isEmpty else { break }
            let held = Set(try await target.query(RealmMoveSQL.movedPositions(events.map(\.position))).rows.map { try $0.decode(Int64.self, at: 0) })
            for run in RealmMoveEvent.runs(events.filter { !held.contains($0.position) }) {
                let statements = try [RealmMoveSQL.insertEvents(run), RealmMoveSQL.advanceStreams(run)] + inlineStatements(run) + [EventStoreSQL.wakeProjections]
                _ = try await target.withConnection { try await $0.pipelineInPlace(statements) }
                appended += run.count
            }
            _ = try await staging.query(RealmMoveSQL.unstage(events.map(\.position)))
            transfer.moved += events.count - held.count
        }
        transfer.progress.moved = transfer.moved
        transfer.progress.staged = try await count(RealmMoveSQL.stagedCount, on: staging)
        transfer.progress.lagBytes = try await slot(transfer.pools, confirmed: "0/0").lag
        return appended
    }

    /// What each inline projection writes for the run, as at an append.
    private func inlineStatements(_ run: [RealmMoveEvent]) throws -> [PQQuery] {
        let envelopes = run.map(\.envelope)
        return try ProjectionCatalog.inline.flatMap { projection in
            let handled = envelopes.filter { projection.handles($0.type) }
            return handled.isEmpty ? [] : try projection.statements(forBatch: handled, tables: .live(projection))
        }
    }

    /// The target holds exactly the source's events of the realm (count and positions' range),
    /// checked under the fence, before anything is flipped.
    func checkComplete(_ pools: Pools) async throws {
        let source = try await pools.source.query(RealmMoveSQL.eventRange(realm: realm)).first!
        let target = try await pools.target.query(RealmMoveSQL.eventRange(realm: realm)).first!
        let figures = try (0..<3).map { (try source.decode(Int64.self, at: $0), try target.decode(Int64.self, at: $0)) }
        guard figures.allSatisfy({ $0.0 == $0.1 }) else {
            throw ServiceRefusal(
                .unavailable, "Move.Incomplete",
                "Cell \(self.target.name) holds \(figures[0].1) of realm \(realm)'s \(figures[0].0) events after the catch-up; the realm stays in cell \(self.source.name).")
        }
    }

    /// Adds the realm's keys the target lacks (`RealmMoveTables.keys`), before a drain: every
    /// key committed with a staged event is then in the target before the event.
    func copyKeys(_ pools: Pools) async throws {
        var statements: [PQQuery] = []
        for table in RealmMoveTables.keys {
            let json = try await pools.source.query(RealmMoveSQL.rows(of: table, realm: realm)).first!.decode(String.self, at: 0)
            statements.append(RealmMoveSQL.addRows(of: table, json: json))
        }
        let finalStatements = statements
        _ = try await pools.target.withConnection { try await $0.pipelineInPlace(finalStatements) }
    }

    /// Copies the realm's rows of every table that events do not derive, and the unexpired DPoP
    /// `jti`s, from the fenced source, in one transaction in the target.
    func copyState(_ pools: Pools) async throws -> Int {
        var statements: [PQQuery] = []
        var rows = 0
        for table in RealmMoveTables.copied {
            let row = try await pools.source.query(RealmMoveSQL.rows(of: table, realm: realm)).first!
            let json = try row.decode(String.self, at: 0)
            rows += try row.decode(Int.self, at: 1)
            statements += RealmMoveSQL.replaceRows(of: table, realm: realm, json: json)
        }
        let jtis = try await pools.source.query(RealmMoveSQL.liveJTIs).first!.decode(String.self, at: 0)
        statements.append(RealmMoveSQL.addJTIs(json: jtis))
        let finalStatements = statements
        _ = try await pools.target.withConnection { try await $0.pipelineInPlace(finalStatements) }
        return rows
    }

    /// Moves the target's position sequence past the moved positions its next appends would
    /// reach (sequences are not replicated), and returns the new value if it moved.
    func rebase(_ pools: Pools) async throws -> Int64? {
        let last = try await pools.target.query(RealmMoveSQL.positionSequence).first!.decode(Int64?.self, at: 0) ?? 0
        let window = Self.upcoming(targetLast: last)
        let highest = try await pools.target.query(RealmMoveSQL.highestPosition(of: realm, within: window)).first!.decode(Int64?.self, at: 0)
        guard let highest else { return nil }
        _ = try await pools.target.query(RealmMoveSQL.rebase(to: highest))
        return highest
    }
}
