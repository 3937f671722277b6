#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EventSourcing
import Metrics
import PQ
import TransparencyLog

/// Signs the audit log's checkpoints with each realm's log key (the product keeps the keys
/// sealed under the master key: ModgudService's `AuditLogKeys`).
public protocol CheckpointSigning: Sendable {
    /// The realm log's origin line, which is also its key's name.
    func origin(realm: String) async throws -> String
    /// `text` as a C2SP signed note by the realm's log key.
    func sign(_ text: String, realm: String) async throws -> String
}

/// Integrates committed events into their realms' Merkle trees, after commit and off the
/// grants' path, and writes signed checkpoints (issue 28; docs/operations/audit-log.md).
///
/// It has the projection daemon's shape: each batch is one transaction that takes the
/// integrator's advisory lock (another instance holding it means "busy"), reads the next
/// events gap-safely after its cursor, appends their leaves and the perfect subtrees they
/// complete, moves the cursor and commits. So every event becomes exactly one leaf, in the
/// order the log's readers see, however many instances run. After the batch, every realm whose
/// tree has grown by `checkpointLeaves` since its latest checkpoint, or has grown at all and
/// whose checkpoint is `checkpointInterval` old, gets a new one.
public actor AuditLogIntegrator: ProjectionWorker {
    public struct Settings: Sendable {
        public var batchSize: Int
        public var checkpointInterval: Duration
        public var checkpointLeaves: Int64
        /// How long the integrator lets events gather after a wake-up before it reads them, so
        /// that under load it integrates a few large batches rather than one per commit. It
        /// bounds the lag it adds (BENCHMARKS.md, "Issue 28").
        public var gather: Duration

        public init(
            batchSize: Int = 1000, checkpointInterval: Duration = .seconds(60), checkpointLeaves: Int64 = 10_000,
            gather: Duration = .milliseconds(200)
        ) {
            self.batchSize = max(1, batchSize)
            self.checkpointInterval = checkpointInterval
            self.checkpointLeaves = max(1, checkpointLeaves)
            self.gather = gather
        }
    }

    /// The name the runner knows it by (and its cursor's row in `checkpoints`).
    public static let name = AuditLogSQL.cursorName

    let pool: PQPool
    public let settings: Settings
    private let signer: any CheckpointSigning
    /// Each realm's tree as this integrator last left it, reused while the stored size agrees
    /// (another instance may have integrated in between; then it is read again).
    private var trees: [String: CompactRange] = [:]
    private let listener: NotificationListener
    private let now: @Sendable () -> Int64
    /// `modgud_audit_log_leaves_total`.
    private let leavesCounter = Counter(label: "modgud_audit_log_leaves_total")
    /// `modgud_audit_log_checkpoints_total`.
    private let checkpointsCounter = Counter(label: "modgud_audit_log_checkpoints_total")

    public init(
        pool: PQPool, signer: any CheckpointSigning, settings: Settings = Settings(),
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        self.pool = pool
        self.signer = signer
        self.settings = settings
        self.listener = NotificationListener(configuration: pool.configuration, channel: EventStoreSQL.channel)
        self.now = now
    }

    public func waitForEvents(timeout: Duration) async throws {
        await listener.wait(timeout: timeout)
        if settings.gather > .zero { try await Task.sleep(for: settings.gather) }
    }

    public func shutdown() async {
        await listener.close()
    }

    public func step(_ name: String) async throws -> ProjectionStep {
        let limit = settings.batchSize
        let known = trees
        let outcome = try await pool.transaction { connection in
            try Self.integrateBatch(on: connection, limit: limit, known: known)
        }
        try await writeDueCheckpoints()
        guard let (integrated, grown) = outcome else { return .busy }
        trees.merge(grown) { _, new in new }
        leavesCounter.increment(by: integrated)
        return integrated == 0 ? .caughtUp : .applied(integrated)
    }

    /// One batch: lock, read, append leaves and nodes, move the cursor. Nil when busy; else
    /// the leaves appended and the trees they grew.
    static func integrateBatch(on connection: isolated PQConnection, limit: Int, known: [String: CompactRange]) throws
        -> (Int, [String: CompactRange])?
    {
        guard try connection.query(EventStoreSQL.tryLockProjectionForTransaction(AuditLogSQL.cursorName)).first?.decode(Bool.self, at: 0) == true
        else { return nil }
        let cursor = try connection.query(EventStoreSQL.checkpoint(AuditLogSQL.cursorName)).first.map(LogCursor.init(checkpointRow:)) ?? .start
        let rows = try connection.query(AuditLogSQL.events(after: cursor, limit: limit)).rows
        guard let lastRow = rows.last else { return (0, [:]) }
        let leaves = try rows.map { try AuditLeaf(row: $0, at: 1) }
        var trees = try loadTrees(Set(leaves.map(\.realm)), known: known, on: connection)
        var leafRows = (realms: [String](), indexes: [Int64](), positions: [Int64](), hashes: [String]())
        var nodeRows = (realms: [String](), levels: [Int64](), indexes: [Int64](), hashes: [String]())
        for leaf in leaves {
            let hash = leaf.hash
            let index = trees[leaf.realm]!.size
            leafRows.realms.append(leaf.realm)
            leafRows.indexes.append(index)
            leafRows.positions.append(leaf.position)
            leafRows.hashes.append(PQHex.encode(hash))
            for completed in trees[leaf.realm]!.append(leafHash: hash) {
                nodeRows.realms.append(leaf.realm)
                nodeRows.levels.append(Int64(completed.node.level))
                nodeRows.indexes.append(completed.node.index)
                nodeRows.hashes.append(PQHex.encode(completed.hash))
            }
        }
        let last = LogCursor(transactionID: try lastRow.decode(PQTransactionID.self, at: 0).rawValue, position: leaves[leaves.count - 1].position)
        let realms = trees.keys.sorted()
        var statements: [PQQuery] = [
            AuditLogSQL.insertLeaves(realms: leafRows.realms, indexes: leafRows.indexes, positions: leafRows.positions, hashes: leafRows.hashes),
            AuditLogSQL.saveHeads(realms: realms, sizes: realms.map { trees[$0]!.size }),
            EventStoreSQL.saveCheckpoint(AuditLogSQL.cursorName, cursor: last, applied: leaves.count),
        ]
        if !nodeRows.realms.isEmpty {
            statements.append(
                AuditLogSQL.insertNodes(realms: nodeRows.realms, levels: nodeRows.levels, indexes: nodeRows.indexes, hashes: nodeRows.hashes))
        }
        _ = try connection.pipeline(statements)
        return (leaves.count, trees)
    }

    /// Each realm's tree as stored: its size and the hashes of its right edge (the known one
    /// when its size is the stored size).
    private static func loadTrees(_ realms: Set<String>, known: [String: CompactRange], on connection: isolated PQConnection) throws
        -> [String: CompactRange]
    {
        var sizes: [String: Int64] = [:]
        for row in try connection.query(AuditLogSQL.heads(Array(realms))).rows {
            sizes[try row.decode(String.self, at: 0)] = try row.decode(Int64.self, at: 1)
        }
        var trees: [String: CompactRange] = [:]
        for realm in realms {
            let size = sizes[realm] ?? 0
            if let tree = known[realm], tree.size == size {
                trees[realm] = tree
                continue
            }
            let stored = try AuditLogReader.hashes(connection.query(AuditLogSQL.nodes(realm: realm, CompactRange.pieces(forSize: size))))
            trees[realm] = try AuditLogReader.tree(realm: realm, size: size, stored: stored)
        }
        return trees
    }

    /// Signs a checkpoint for every realm that is due one.
    private func writeDueCheckpoints() async throws {
        let interval = Double(settings.checkpointInterval.components.seconds)
        for row in try await pool.query(AuditLogSQL.uncheckpointed).rows {
            let realm = try row.decode(String.self, at: 0)
            let size = try row.decode(Int64.self, at: 1)
            let signedSize = try row.decode(Int64?.self, at: 2)
            let age = try row.decode(Double?.self, at: 3)
            if let signedSize, let age, size - signedSize < settings.checkpointLeaves, age < interval { continue }
            let root: [UInt8]
            if let tree = trees[realm], tree.size == size {
                root = tree.root
            } else {
                root = try await AuditLogReader(pool: pool).root(realm: realm, size: size)
            }
            let checkpoint = Checkpoint(origin: try await signer.origin(realm: realm), size: size, root: root, timestamp: now())
            let note = try await signer.sign(checkpoint.body, realm: realm)
            _ = try await pool.query(AuditLogSQL.insertCheckpoint(realm: realm, size: size, root: root, note: note))
            checkpointsCounter.increment()
        }
    }
}

extension AuditLogIntegrator {
    /// Runs until cancelled, as `serve` does: woken by the log's NOTIFY and by polling (a
    /// checkpoint falls due with time as well as with leaves). An unreachable database is
    /// reported to `onOutage` and retried with backoff (`ProjectionRunner`); it never ends the
    /// loop, nor through it the process.
    public nonisolated func run(pollInterval: Duration = .seconds(1), onOutage: @escaping @Sendable (any Error, Duration) -> Void = { _, _ in })
        async
    {
        await ProjectionRunner(worker: self, projections: [Self.name], pollInterval: pollInterval).run(onError: onOutage)
        await shutdown()
    }
}

/// The audit log's stored state is not what its own writer left.
public enum AuditLogError: Error, Equatable, CustomStringConvertible {
    case missingNode(realm: String, TreeNode)
    case unknownPosition(Int64)
    case sizeOutOfRange(String)

    public var description: String {
        switch self {
        case .missingNode(let realm, let node): return "the audit log of \(realm) lacks node \(node.level)/\(node.index)"
        case .unknownPosition(let position): return "no leaf for position \(position)"
        case .sizeOutOfRange(let detail): return detail
        }
    }
}
