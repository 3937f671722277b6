import Foundation
import PQ

/// Moves a realm from the cell that serves it to another, while both serve (issue 71 item 3,
/// docs/operations/cells.md, "Moving a realm"): PostgreSQL's logical replication stages the
/// realm's events in a database on the target's cluster (a publication with a row filter, an
/// initial copy, then the catch-up); the move appends them to the target's log in the source's
/// order with the inline projections, fences the realm (the directory answers 503 with
/// `Retry-After`, and triggers in the source refuse its writes once the open ones committed),
/// waits until the subscriber has confirmed the source's WAL position, moves the tail and the
/// state that events do not hold, re-bases the target's positions, and flips the directory.
/// Run it again after a failure before the fence: it resumes where the staging database is.
public struct RealmMove: Sendable {
    public enum Phase: String, Sendable { case preparing, copying, catchingUp = "catching up", fenced, flipped }

    /// What the move is doing, for a progress display.
    public struct Progress: Sendable {
        public var phase: Phase
        /// Events appended to the target so far.
        public var moved: Int
        /// Events staged and not yet appended.
        public var staged: Int
        /// The subscription's lag behind the source's WAL, in bytes (nil before the slot exists).
        public var lagBytes: Int64?
        /// The initial copy's state (`pg_subscription_rel.srsubstate`: d copying, r ready).
        public var copyState: String
    }

    /// The figures of a finished move.
    public struct Summary: Sendable {
        public var events: Int
        public var copiedRows: Int
        /// From the publication's creation to the fence.
        public var catchUp: Duration
        /// From marking the realm moving to the flip: how long its requests were answered 503.
        public var fenceWindow: Duration
        /// The target's position sequence after the re-base, if it had to move.
        public var rebasedTo: Int64?
    }

    public let realm: String
    public let source: CellMap.Cell
    public let target: CellMap.Cell
    /// How long the fence may hold before the move gives up and unfences (the source serves on).
    public var fenceLimit: Duration = .seconds(30)
    let directory: PQPool
    let names: Names

    /// The publication, slot, subscription and staging database share one name.
    struct Names {
        var replication: String
        var staging: String { replication }
        /// Trigger names: short, since a table's name goes in front of it.
        var fence: String
    }

    /// Plans the move of `realm` to cell `to`: its source is where the directory places it, or
    /// the one cell that holds it.
    public static func plan(realm: String, to: String, directory: PQPool) async throws -> RealmMove {
        let map = try await CellDirectory.read(pool: directory)
        guard let target = map.cells.first(where: { $0.name == to }) else {
            throw ServiceRefusal(.notFound, "Cell.NotFound", "No cell is named \(to): add it with `modgud cell add`.")
        }
        guard let sourceName = map.placements[realm]?.cell else {
            throw ServiceRefusal(.invalid, "Realm.Unplaced", "Realm \(realm) has no placement: place it in its cell first (`modgud cell place`).")
        }
        guard sourceName != to else { throw ServiceRefusal(.invalid, "Realm.AlreadyThere", "Realm \(realm) is already in cell \(to).") }
        let source = map.cells.first { $0.name == sourceName }!
        return RealmMove(realm: realm, source: source, target: target, directory: directory, names: names(for: realm))
    }

    static func names(for realm: String) -> Names {
        let safe = String(realm.lowercased().map { $0.isLetter && $0.isASCII || $0.isNumber && $0.isASCII ? $0 : "_" }.prefix(24))
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in realm.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let tag = String(String(hash, radix: 16).prefix(10))
        return Names(replication: "modgud_move_\(safe)_\(tag)", fence: tag)
    }

    /// The positions the target will hand out next: from its sequence to the end of its
    /// range (cells hand out from ranges 2^40 apart, `modgud cell add`). A moved position in
    /// it would collide with one of the target's own later appends, so the re-base moves the
    /// sequence past the highest such one; moved positions of other ranges need nothing.
    static func upcoming(targetLast: Int64) -> Range<Int64> {
        (targetLast + 1)..<(((targetLast >> 40) + 1) << 40)
    }

    /// Runs the move to its flip (or to an error, after which the source serves on).
    public func run(progress: @escaping @Sendable (Progress) -> Void) async throws -> Summary {
        let pools = Pools(source: Self.pool(source.databaseURL), target: Self.pool(target.databaseURL))
        defer { Task { await pools.close() } }
        let started = ContinuousClock.now
        var transfer = try await prepare(pools, progress: progress)
        try await catchUp(&transfer, progress: progress)
        let catchUp = ContinuousClock.now - started
        var summary = try await fenceAndFlip(&transfer, progress: progress)
        summary.catchUp = catchUp
        try? await cleanUp(pools)
        return summary
    }

    /// Starts the cell's positions at 2^40 × its index in the directory, unless past it
    /// already: realms' positions travel unchanged in a move, so cells hand out apart.
    public static func separatePositions(ofCellAt index: Int, pool: PQPool) async throws {
        _ = try await pool.query(RealmMoveSQL.separatePositions(cellIndex: Int64(index)))
    }

    static func pool(_ url: String) -> PQPool {
        PQPool(configuration: PQConfiguration(connectionString: url), options: .init(maxConnections: 2))
    }
}
