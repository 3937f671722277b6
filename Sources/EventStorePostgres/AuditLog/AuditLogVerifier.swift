import PQ
import TransparencyLog

/// `modgud audit verify` (issue 28): recomputes every leaf of a realm's log from the stored
/// events, rebuilds the tree, checks every checkpoint's signature and root and the
/// consistency between consecutive ones, and reports the first place anything differs
/// (docs/operations/audit-log.md, "Verifying").
public struct AuditLogVerifier: Sendable {
    let pool: PQPool
    /// The realm log's origin (its key's name) and Ed25519 public key.
    public let origin: String
    public let publicKey: [UInt8]
    /// Leaves read per query.
    public var pageSize = 10_000

    public init(pool: PQPool, origin: String, publicKey: [UInt8]) {
        self.pool = pool
        self.origin = origin
        self.publicKey = publicKey
    }

    /// The first difference found.
    public struct Finding: Sendable, Equatable, CustomStringConvertible {
        /// The event's position, when the difference is one event's.
        public var position: Int64?
        public var leafIndex: Int64?
        public var reason: String

        public var description: String {
            [position.map { "position \($0)" }, leafIndex.map { "leaf \($0)" }].compactMap { $0 }.joined(separator: ", ")
                + (position == nil && leafIndex == nil ? "" : ": ") + reason
        }
    }

    public struct Report: Sendable, Equatable {
        public var size: Int64 = 0
        public var leavesChecked: Int64 = 0
        public var checkpointsChecked = 0
        /// Leaves whose event a recorded operation removed or rewrote.
        public var removed: Int64 = 0
        public var rewritten: Int64 = 0
        public var finding: Finding?
    }

    /// Verifies the realm's log.
    /// - Parameters:
    ///   - resume: the tree as an earlier run left it (its leaves are not read again).
    ///   - external: a checkpoint note held outside the database, as a witness holds it.
    ///   - progress: told after each page: leaves done, and the tree's size.
    ///   - save: told the tree after each page, to resume from.
    public func verify(
        realm: String, resume: CompactRange? = nil, external: String? = nil, progress: @Sendable (Int64, Int64) -> Void = { _, _ in },
        save: @Sendable (CompactRange) -> Void = { _ in }
    ) async throws -> Report {
        var report = Report()
        let reader = AuditLogReader(pool: pool)
        report.size = try await reader.size(realm: realm)
        var checkpoints: [Checkpoint] = []
        for stored in try await reader.checkpoints(realm: realm) {
            guard let checkpoint = open(stored.note, size: stored.size, report: &report) else { return report }
            checkpoints.append(checkpoint)
        }
        if let external {
            guard let checkpoint = open(external, size: nil, report: &report) else { return report }
            if checkpoint.size > report.size {
                report.finding = Finding(
                    leafIndex: report.size, reason: "the log has \(report.size) leaves; the checkpoint held outside has \(checkpoint.size)")
                return report
            }
            checkpoints.append(checkpoint)
        }
        checkpoints.sort { $0.size < $1.size }
        var tree = resume ?? CompactRange()
        var pending = checkpoints.filter { $0.size > tree.size }
        while tree.size < report.size {
            let page = try await pool.query(AuditLogSQL.leavesWithEvents(realm: realm, from: tree.size, limit: pageSize)).rows
            if page.isEmpty { break }
            let redactions = try await self.redactions(realm: realm, page: page)
            for row in page {
                if let finding = try check(row, expected: tree.size, redactions: redactions, report: &report) {
                    report.finding = finding
                    return report
                }
                tree.append(leafHash: try row.decode(PQBytes.self, at: 2).bytes)
                report.leavesChecked += 1
                while let next = pending.first, next.size == tree.size {
                    pending.removeFirst()
                    guard next.root == tree.root else {
                        report.finding = Finding(
                            leafIndex: tree.size - 1,
                            reason: "the leaves up to \(tree.size) do not hash to the root the checkpoint of size \(next.size) signed")
                        return report
                    }
                }
            }
            save(tree)
            progress(tree.size, report.size)
        }
        if let finding = try await tail(realm: realm, tree: tree, checkpoints: checkpoints, reader: reader, report: report) {
            report.finding = finding
        }
        return report
    }

    /// A signed checkpoint's content, or nil with the finding recorded.
    private func open(_ note: String, size: Int64?, report: inout Report) -> Checkpoint? {
        do {
            let checkpoint = try Checkpoint(body: SignedNote.open(note, name: origin, publicKey: publicKey))
            guard checkpoint.origin == origin, size == nil || checkpoint.size == size else { throw CheckpointError.malformed("another log's checkpoint") }
            report.checkpointsChecked += 1
            return checkpoint
        } catch {
            report.finding = Finding(reason: "checkpoint\(size.map { " of size \($0)" } ?? " held outside"): \(error)")
            return nil
        }
    }

    private func redactions(realm: String, page: [PQRow]) async throws -> [Int64: [(AuditRedaction.Kind, [UInt8]?)]] {
        let positions = try page.map { try $0.decode(Int64.self, at: 1) }
        var found: [Int64: [(AuditRedaction.Kind, [UInt8]?)]] = [:]
        for row in try await pool.query(AuditLogSQL.redactions(realm: realm, positions: positions)).rows {
            guard let kind = AuditRedaction.Kind(rawValue: try row.decode(String.self, at: 1)) else { continue }
            found[try row.decode(Int64.self, at: 0), default: []].append((kind, try row.decode(PQBytes?.self, at: 2)?.bytes))
        }
        return found
    }

    /// One leaf against its event: nil when it holds (or a recorded operation explains it).
    private func check(_ row: PQRow, expected: Int64, redactions: [Int64: [(AuditRedaction.Kind, [UInt8]?)]], report: inout Report) throws
        -> Finding?
    {
        let index = try row.decode(Int64.self, at: 0)
        let position = try row.decode(Int64.self, at: 1)
        guard index == expected else { return Finding(leafIndex: expected, reason: "leaf \(expected) is missing from the log") }
        let stored = try row.decode(PQBytes.self, at: 2).bytes
        let records = redactions[position] ?? []
        guard try row.decode(Bool.self, at: 3) else {
            if records.contains(where: { $0.0 == .removed }) {
                report.removed += 1
                return nil
            }
            return Finding(position: position, leafIndex: index, reason: "the event is gone, and no recorded operation removed it")
        }
        let leaf = try AuditLeaf(row: row, at: 4)
        let hash = leaf.hash
        if hash == stored { return nil }
        if records.contains(where: { $0.0 == .rewritten && $0.1 == hash }) {
            report.rewritten += 1
            return nil
        }
        return Finding(position: position, leafIndex: index, reason: "the event differs from its leaf (edited, moved or replaced)")
    }

    /// After the leaves: consecutive checkpoints are consistent by the stored proofs, and no
    /// event the integrator passed is missing from the log.
    private func tail(realm: String, tree: CompactRange, checkpoints: [Checkpoint], reader: AuditLogReader, report: Report) async throws -> Finding? {
        for (earlier, later) in zip(checkpoints, checkpoints.dropFirst()) where earlier.size < later.size {
            let proof = try await reader.consistencyProof(realm: realm, first: earlier.size, second: later.size)
            do {
                try MerkleVerification.verifyConsistency(
                    first: earlier.size, second: later.size, firstRoot: earlier.root, secondRoot: later.root, path: proof)
            } catch {
                return Finding(leafIndex: earlier.size, reason: "the checkpoints of sizes \(earlier.size) and \(later.size) are not consistent")
            }
        }
        if let position = try await pool.query(AuditLogSQL.firstEventMissingFromTheLog(realm: realm)).first?.decode(Int64.self, at: 0) {
            return Finding(position: position, reason: "the event is not in the log (written below the integrated part)")
        }
        return nil
    }
}
