import Crypto
import EventSourcing
import EventStorePostgres
import Foundation
import PQ
import PostgresTestSupport
import TransparencyLog
import XCTest

/// The audit log over a real PostgreSQL (issue 28): every event one leaf whatever the number of
/// integrators, checkpoints that verify, every tampering found at its position, and the
/// recorded operator rewrites that verify.
final class AuditLogTests: XCTestCase {
    var database: TestDatabase!
    var store: PostgresEventStore!
    let signer = TestSigner()

    struct TestSigner: CheckpointSigning {
        let key = Curve25519.Signing.PrivateKey()
        var publicKey: [UInt8] { Array(key.publicKey.rawRepresentation) }
        func origin(realm: String) async throws -> String { "test.modgud/\(realm)" }
        func sign(_ text: String, realm: String) async throws -> String {
            try SignedNote.sign(text, name: try await origin(realm: realm), key: key)
        }
    }

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 20)
        store = PostgresEventStore(pool: database.pool)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    /// `count` events over three streams in each of two realms, integrated, with a checkpoint
    /// after every batch of 7.
    @discardableResult
    private func makeLog(count: Int = 30, pool: PQPool? = nil) async throws -> AuditLogIntegrator {
        for index in 0..<count {
            let realm = index.isMultiple(of: 2) ? "r1" : "r2"
            let key = "s\(index % 3)"
            let current = try await store.version(of: stream(key, realm: realm).id)
            _ = try await store.append([try counted(index)], to: stream(key, realm: realm), expected: ExpectedVersion(current: current), metadata: .none)
        }
        let integrator = AuditLogIntegrator(
            pool: pool ?? database.pool, signer: signer, settings: .init(batchSize: 7, checkpointInterval: .seconds(3600), checkpointLeaves: 1))
        try await integrate(integrator)
        return integrator
    }

    private func integrate(_ integrator: AuditLogIntegrator) async throws {
        while true {
            switch try await integrator.step(AuditLogIntegrator.name) {
            case .applied: continue
            case .caughtUp: return
            case .busy, .failed: XCTFail("a lone integrator is never busy"); return
            }
        }
    }

    private func verify(_ realm: String = "r1", external: String? = nil) async throws -> AuditLogVerifier.Report {
        try await AuditLogVerifier(pool: database.pool, origin: "test.modgud/\(realm)", publicKey: signer.publicKey).verify(realm: realm, external: external)
    }

    private func positions(_ realm: String = "r1") async throws -> [Int64] {
        try await database.pool.query("SELECT position FROM events WHERE realm = \(realm) ORDER BY position").rows.map { try $0.decode(Int64.self, at: 0) }
    }

    func testEveryEventIsOneLeafAndTheSignedRootIsTheTreeOfItsLeaves() async throws {
        try await makeLog()
        for realm in ["r1", "r2"] {
            let report = try await verify(realm)
            XCTAssertNil(report.finding, "\(report.finding!)")
            XCTAssertEqual(report.size, 15)
            XCTAssertEqual(report.leavesChecked, 15)
            XCTAssertGreaterThanOrEqual(report.checkpointsChecked, 2, "a checkpoint after each batch")
        }
        // The latest checkpoint's root is the RFC 9162 tree of the events' leaves in log order.
        let reader = AuditLogReader(pool: database.pool)
        let stored = try await reader.latestCheckpoint(realm: "r1")
        let latest = try XCTUnwrap(stored)
        let checkpoint = try Checkpoint(body: SignedNote.open(latest.note, name: "test.modgud/r1", publicKey: signer.publicKey))
        var tree = CompactRange()
        for row in try await database.pool.query(
            """
            SELECT e.realm, e.position, e.stream_id, e.stream_type, e.stream_version, e.type, e.revision::int8, e.payload::text,
                   e.metadata::text, (extract(epoch FROM e.recorded_at) * 1000000)::int8
            FROM events e WHERE realm = 'r1' ORDER BY tx_id, position
            """
        ).rows.prefix(Int(checkpoint.size)) {
            tree.append(leafHash: MerkleHash.leaf(try Self.leafData(row)))
        }
        XCTAssertEqual(tree.root, checkpoint.root)
        // Every inclusion proof of the checkpoint's tree verifies against its root.
        for (index, position) in try await positions().prefix(Int(checkpoint.size)).enumerated() {
            let found = try await reader.leaf(position: position)
            let leaf = try XCTUnwrap(found)
            XCTAssertEqual(leaf.index, Int64(index))
            let path = try await reader.inclusionProof(realm: "r1", index: leaf.index, size: checkpoint.size)
            try MerkleVerification.verifyInclusion(leafHash: leaf.hash, index: leaf.index, size: checkpoint.size, path: path, root: checkpoint.root)
        }
    }

    /// The documented leaf encoding, written here from docs/operations/audit-log.md.
    static func leafData(_ row: PQRow) throws -> [UInt8] {
        var fields = ["modgud-event/1", try row.decode(String.self, at: 0), String(try row.decode(Int64.self, at: 1))]
        fields += [try row.decode(String.self, at: 2), try row.decode(String.self, at: 3), String(try row.decode(Int64.self, at: 4))]
        fields += [try row.decode(String.self, at: 5), String(try row.decode(Int64.self, at: 6)), try row.decode(String.self, at: 7)]
        fields += [try row.decode(String.self, at: 8), String(try row.decode(Int64.self, at: 9))]
        return fields.flatMap { field -> [UInt8] in
            let count = UInt32(field.utf8.count)
            return withUnsafeBytes(of: count.bigEndian, Array.init) + Array(field.utf8)
        }
    }

    func testTwoIntegratorsRacingMakeEachEventExactlyOneLeaf() async throws {
        let second = database.makePool(maxConnections: 5)
        for index in 0..<60 {
            _ = try await store.append([try counted(index)], to: stream("race\(index)", realm: "r1"), expected: .noStream, metadata: .none)
        }
        let settings = AuditLogIntegrator.Settings(batchSize: 5, checkpointInterval: .seconds(3600), checkpointLeaves: 10)
        let integrators = [
            AuditLogIntegrator(pool: database.pool, signer: signer, settings: settings), AuditLogIntegrator(pool: second, signer: signer, settings: settings),
        ]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for integrator in integrators {
                group.addTask {
                    var idle = 0
                    while idle < 3 {
                        switch try await integrator.step(AuditLogIntegrator.name) {
                        case .applied: idle = 0
                        case .caughtUp: idle += 1
                        case .busy: await Task.yield()
                        case .failed(let reason): XCTFail(reason)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        await second.close()
        let counts = try await database.pool.query("SELECT count(*), count(DISTINCT position), max(leaf_index) FROM audit_leaves").first!
        XCTAssertEqual(try counts.decode(Int64.self, at: 0), 60)
        XCTAssertEqual(try counts.decode(Int64.self, at: 1), 60)
        XCTAssertEqual(try counts.decode(Int64.self, at: 2), 59, "leaf indexes 0…59 without a gap")
        let report = try await verify()
        XCTAssertNil(report.finding)
        XCTAssertEqual(report.leavesChecked, 60)
    }

    func testAnEditedPayloadIsFoundAtItsPosition() async throws {
        try await makeLog()
        let target = try await positions()[5]
        _ = try await database.pool.query("UPDATE events SET payload = '{\"n\": 999}' WHERE position = \(target)")
        let report = try await verify()
        XCTAssertEqual(report.finding?.position, target, "\(String(describing: report.finding))")
        XCTAssertEqual(report.finding?.leafIndex, 5)
    }

    func testADeletedEventIsFoundAtItsPosition() async throws {
        try await makeLog()
        let target = try await positions()[9]
        _ = try await database.pool.query("DELETE FROM events WHERE position = \(target)")
        let report = try await verify()
        XCTAssertEqual(report.finding?.position, target)
        XCTAssertTrue(report.finding?.reason.contains("gone") == true)
    }

    /// Two events' contents swapped in place (positions are an identity column and versions
    /// unique per stream, so this is how a reorder looks in the table).
    func testTwoReorderedEventsAreFoundAtTheFirst() async throws {
        try await makeLog()
        let all = try await positions()
        let (first, second) = (all[3], all[11])
        _ = try await database.pool.query(
            """
            UPDATE events e SET payload = o.payload, recorded_at = o.recorded_at
            FROM events o WHERE (e.position, o.position) IN ((\(first), \(second)), (\(second), \(first)))
            """)
        let report = try await verify()
        XCTAssertEqual(report.finding?.position, first)
    }

    func testATruncatedTailIsFoundAtItsFirstPosition() async throws {
        try await makeLog()
        let target = try await positions()[12]
        _ = try await database.pool.query("DELETE FROM events WHERE realm = 'r1' AND position >= \(target)")
        let report = try await verify()
        XCTAssertEqual(report.finding?.position, target)
    }

    /// Whoever also owns the audit tables can drop their guard and cut the log and its
    /// checkpoints back consistently. The database alone then verifies; a checkpoint kept
    /// outside (a witness) does not.
    func testACutBackLogIsFoundByACheckpointHeldOutside() async throws {
        try await makeLog()
        let latest = try await AuditLogReader(pool: database.pool).latestCheckpoint(realm: "r1")
        let held = try XCTUnwrap(latest)
        XCTAssertEqual(held.size, 15)
        let cut = try await positions()[10]
        for statement: PQQuery in [
            "ALTER TABLE audit_leaves DISABLE TRIGGER USER", "ALTER TABLE audit_checkpoints DISABLE TRIGGER USER",
            "DELETE FROM events WHERE realm = 'r1' AND position >= \(cut)", "DELETE FROM audit_leaves WHERE realm = 'r1' AND leaf_index >= 10",
            "DELETE FROM audit_checkpoints WHERE realm = 'r1' AND tree_size > 10", "UPDATE audit_tree_heads SET tree_size = 10 WHERE realm = 'r1'",
        ] {
            _ = try await database.pool.query(statement)
        }
        let inside = try await verify()
        XCTAssertNil(inside.finding, "consistent with itself: what the database alone cannot prove")
        let outside = try await verify(external: held.note)
        XCTAssertEqual(outside.finding?.leafIndex, 10, "\(String(describing: outside.finding))")
    }

    func testTheAuditTablesRefuseUpdatesAndDeletes() async throws {
        try await makeLog(count: 4)
        for statement: PQQuery in [
            "DELETE FROM audit_leaves", "UPDATE audit_nodes SET hash = hash", "DELETE FROM audit_checkpoints", "TRUNCATE audit_leaves",
        ] {
            do {
                _ = try await database.pool.query(statement)
                XCTFail("\(statement.sql) was allowed")
            } catch let error as PQError {
                XCTAssertTrue(error.description.contains("append-only"), error.description)
            }
        }
    }

    func testRetentionPruningAndRewritesVerifyAgainstTheirRecords() async throws {
        try await makeLog()
        // A rewrite as `privacy seal-legacy` does it, and a stream renamed.
        let maintenance = EventLogMaintenance(pool: database.pool)
        let raw = try await maintenance.events(afterPosition: 0, limit: 1)[0]
        XCTAssertEqual(raw.realm, "r1")
        try await maintenance.apply([.init(event: raw, payload: #"{"n": -1, "sealed": true}"#, metadata: raw.metadata)])
        try await maintenance.renameStream(stream("s1", realm: "r1").id, to: "counter-renamed")
        // One-shot streams past retention.
        _ = try await store.append([try counted(1)], to: StreamRef(type: "once", key: "a", realm: "r1"), expected: .noStream, metadata: .none)
        let integrator = AuditLogIntegrator(pool: database.pool, signer: signer, settings: .init(checkpointInterval: .seconds(3600), checkpointLeaves: 1))
        try await integrate(integrator)
        let pruned = try await LogRetention(pool: database.pool, streamTypes: ["once"], maxAge: .seconds(60)).prune(now: Date().addingTimeInterval(3600))
        XCTAssertEqual(pruned.events, 1)
        try await integrate(integrator)

        let report = try await verify()
        XCTAssertNil(report.finding, "\(report.finding!)")
        XCTAssertEqual(report.removed, 1)
        XCTAssertGreaterThanOrEqual(report.rewritten, 2, "the rewritten payload and the renamed stream's events")
        let operations = try await database.pool.query(
            "SELECT payload->>'operation' FROM events WHERE realm = 'r1' AND type = \(AuditRedaction.eventType) ORDER BY position"
        ).rows.map { try $0.decode(String.self, at: 0) }
        XCTAssertEqual(operations, ["seal-legacy", "rename-stream", "retention"], "each operation is an event of the realm's log")
        // An edit after the recorded rewrite is still found.
        _ = try await database.pool.query("UPDATE events SET payload = '{\"n\": 5}' WHERE position = \(raw.position)")
        let edited = try await verify()
        XCTAssertEqual(edited.finding?.position, raw.position)
    }
}
