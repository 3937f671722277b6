import Foundation
import PQ
import Synchronization

extension RealmMove {
    /// The move's connections: the source cell, the target cell, and the staging database.
    final class Pools: Sendable {
        let source: PQPool
        let target: PQPool
        let staging: Mutex<PQPool?> = Mutex(nil)

        init(source: PQPool, target: PQPool) {
            self.source = source
            self.target = target
        }

        var stagingPool: PQPool { staging.withLock { $0! } }

        func close() async {
            await source.close()
            await target.close()
            if let staging = staging.withLock({ $0 }) { await staging.close() }
        }
    }

    /// What the move has done so far.
    struct Transfer {
        let pools: Pools
        var moved = 0
        var progress: Progress
    }

    /// Checks that the move can run, then creates what is missing of the publication, the
    /// staging database and the subscription (all of them when it resumes).
    func prepare(_ pools: Pools, progress: @Sendable (Progress) -> Void) async throws -> Transfer {
        let level = try await pools.source.query(RealmMoveSQL.walLevel).first!.decode(String.self, at: 0)
        guard level == "logical" else {
            throw ServiceRefusal(
                .invalid, "Cell.NotLogical",
                "Cell \(source.name) runs with wal_level=\(level); a move needs wal_level=logical there (docs/operations/cells.md).")
        }
        let resuming = try await count(RealmMoveSQL.databaseExists(names.staging), on: pools.target) > 0
        if !resuming, try await count(RealmMoveSQL.holds(realm: realm), on: pools.target) > 0 {
            throw ServiceRefusal(
                .conflict, "Realm.AlreadyHeld",
                "Cell \(target.name) already holds realm \(realm): retire it there first (`modgud realm retire \(realm) --cell \(target.name)`).")
        }
        try await checkPositions(pools)
        if try await count(RealmMoveSQL.publicationExists(names.replication), on: pools.source) == 0 {
            _ = try await pools.source.query(RealmMoveSQL.createPublication(names.replication, realm: realm))
        }
        try await subscribe(pools, resuming: resuming)
        let state = Progress(phase: .preparing, moved: 0, staged: 0, lagBytes: nil, copyState: "i")
        progress(state)
        return Transfer(pools: pools, progress: state)
    }

    /// The slot, the staging database and its subscription. A resumed move whose slot is gone
    /// (the source failed over: PostgreSQL 15 does not carry logical slots to a standby) starts
    /// its staging over, since the changes between the old slot and the new one would be lost;
    /// the events it already appended are skipped by position.
    func subscribe(_ pools: Pools, resuming: Bool) async throws {
        let slotLost = try await pools.source.query(RealmMoveSQL.slotSender(names.replication)).first == nil
        _ = try await pools.source.query(RealmMoveSQL.createSlot(names.replication))
        if !resuming { _ = try await pools.target.query(RealmMoveSQL.createDatabase(names.staging)) }
        let staging = Self.pool(PQConfiguration.replacingDatabase(in: target.databaseURL, with: names.staging))
        pools.staging.withLock { $0 = staging }
        try await Self.untilReachable(staging)
        _ = try await staging.query(RealmMoveSQL.stagingSchema)
        if resuming && slotLost {
            try await Self.dropSubscription(names.replication, staging: staging)
            _ = try await staging.query(RealmMoveSQL.clearStaging)
        }
        if try await count(RealmMoveSQL.subscriptionExists(names.replication), on: staging) == 0 {
            _ = try await staging.query(RealmMoveSQL.createSubscription(names.replication, source: source.databaseURL))
        }
    }

    /// Waits until the new staging database answers: a URL naming an HA group's nodes may
    /// reach a standby first that has not replayed the new database yet (seen in ops/cells-test
    /// right after the group failed over: `database … does not exist` from the standby).
    static func untilReachable(_ pool: PQPool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                _ = try await pool.query(RealmMoveSQL.ping)
                return
            } catch where ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// The moved positions travel unchanged, so the target must hold none of them.
    func checkPositions(_ pools: Pools) async throws {
        let range = try await pools.source.query(RealmMoveSQL.eventRange(realm: realm)).first!
        let (low, high) = (try range.decode(Int64.self, at: 1), try range.decode(Int64.self, at: 2))
        let overlapping = try await count(RealmMoveSQL.eventsWithin(low, high), on: pools.target) > 0
        if overlapping, try await !resumedOnly(pools, low, high) {
            throw ServiceRefusal(
                .conflict, "Cell.PositionsOverlap",
                "Cell \(target.name) holds events at positions \(low)…\(high), where realm \(realm)'s are in cell \(source.name): add cells with `modgud cell add` before they hold events, so that their ranges are apart (docs/operations/cells.md).")
        }
    }

    /// Whether the target's events in the range are all this realm's (a resumed move's).
    private func resumedOnly(_ pools: Pools, _ low: Int64, _ high: Int64) async throws -> Bool {
        try await count(RealmMoveSQL.foreignEventsWithin(low, high, realm: realm), on: pools.target) == 0
    }

    /// Waits for the initial copy, then appends what is staged until the tail is small.
    func catchUp(_ transfer: inout Transfer, progress: @Sendable (Progress) -> Void) async throws {
        transfer.progress.phase = .copying
        while true {
            let state = try await transfer.pools.stagingPool.query(RealmMoveSQL.copyState).first!.decode(String.self, at: 0)
            transfer.progress.copyState = state
            transfer.progress.staged = try await count(RealmMoveSQL.stagedCount, on: transfer.pools.stagingPool)
            transfer.progress.lagBytes = try await slot(transfer.pools, confirmed: "0/0").lag
            progress(transfer.progress)
            if state == "r" { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        transfer.progress.phase = .catchingUp
        while true {
            let (horizon, lsn) = try await horizonAndLSN(transfer.pools)
            try await waitConfirmed(lsn, transfer.pools, limit: .seconds(120))
            try await copyKeys(transfer.pools)
            let appended = try await drain(below: horizon, &transfer)
            progress(transfer.progress)
            if appended < 1000 { break }
        }
    }

    /// Fences the realm, moves the tail and the state, re-bases and flips; unfences on failure.
    func fenceAndFlip(_ transfer: inout Transfer, progress: @Sendable (Progress) -> Void) async throws -> Summary {
        let fenced = ContinuousClock.now
        try await CellDirectory.place(realm: realm, cell: source.name, state: .moving, pool: directory)
        transfer.progress.phase = .fenced
        progress(transfer.progress)
        do {
            try await fence(transfer.pools.source)
            let (_, lsn) = try await horizonAndLSN(transfer.pools)
            try await waitConfirmed(lsn, transfer.pools, limit: fenceLimit)
            let copied = try await copyState(transfer.pools)
            _ = try await drain(below: nil, &transfer)
            try await checkComplete(transfer.pools)
            let rebased = try await rebase(transfer.pools)
            try await CellDirectory.place(realm: realm, cell: target.name, state: .serving, pool: directory)
            transfer.progress.phase = .flipped
            progress(transfer.progress)
            return Summary(events: transfer.moved, copiedRows: copied, catchUp: .zero, fenceWindow: ContinuousClock.now - fenced, rebasedTo: rebased)
        } catch {
            try? await unfence(transfer.pools.source)
            try? await CellDirectory.place(realm: realm, cell: source.name, state: .serving, pool: directory)
            throw error
        }
    }

    /// The triggers, one table at a time (each waits for that table's open writers).
    func fence(_ pool: PQPool) async throws {
        _ = try await pool.query(RealmMoveSQL.fenceFunction)
        for (table, column) in RealmMoveTables.fenced {
            for statement in RealmMoveSQL.fence(table: table, column: column, realm: realm, tag: names.fence) {
                _ = try await pool.query(statement)
            }
        }
    }

    func unfence(_ pool: PQPool) async throws {
        for (table, _) in RealmMoveTables.fenced {
            for statement in RealmMoveSQL.unfence(table: table, tag: names.fence) { _ = try await pool.query(statement) }
        }
    }

    /// Drops the subscription, the source's slot, the staging database and the publication.
    /// The fence triggers stay in the source until `modgud realm retire`.
    func cleanUp(_ pools: Pools) async throws {
        if let staging = pools.staging.withLock({ $0 }) {
            try await Self.dropSubscription(names.replication, staging: staging)
            await staging.close()
            pools.staging.withLock { $0 = nil }
        }
        try await Self.dropSlot(names.replication, on: pools.source)
        _ = try await pools.target.query(RealmMoveSQL.dropDatabase(names.staging))
        _ = try await pools.source.query(RealmMoveSQL.dropPublication(names.replication))
    }

    static func dropSubscription(_ name: String, staging: PQPool) async throws {
        guard try await staging.query(RealmMoveSQL.subscriptionExists(name)).first!.decode(Int.self, at: 0) > 0 else { return }
        for statement in RealmMoveSQL.dropSubscription(name) { _ = try await staging.query(statement) }
    }

    /// Drops the slot in the source once no walsender streams from it (the disabled
    /// subscription's may linger a moment; it is ended).
    static func dropSlot(_ name: String, on source: PQPool) async throws {
        for _ in 0..<100 {
            guard let row = try await source.query(RealmMoveSQL.slotSender(name)).first else { return }
            if let pid = try row.decode(Int32?.self, at: 0) {
                _ = try await source.query(RealmMoveSQL.terminate(pid))
            } else if (try? await source.query(RealmMoveSQL.dropSlot(name))) != nil {
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ServiceRefusal(.unavailable, "Move.SlotBusy", "The replication slot \(name) stayed in use for 10 s; drop it with pg_drop_replication_slot.")
    }

    func count(_ query: PQQuery, on pool: PQPool) async throws -> Int {
        try await pool.query(query).first!.decode(Int.self, at: 0)
    }
}
