import EventStorePostgres
import Foundation
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

/// Issue 28: `modgud audit checkpoint` and `modgud audit verify` as an auditor runs them:
/// exit codes, a resumed run, a checkpoint kept outside with a key given by hand, and a
/// tampered row reported at its position.
final class AuditLogCommandTests: XCTestCase {
    var database: TestDatabase!
    var cli: CLIRunner!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 4)
        cli = CLIRunner(databaseURL: database.url)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    func testCheckpointAndVerifyCommands() async throws {
        try cli.ok(["realm", "create", "acme", "--host", "login.acme.test"])
        try cli.ok(["user", "create", "acme", "ada@example.com"])
        XCTAssertTrue(try cli.fails(["audit", "verify", "acme"]).contains("no audit log key"))

        // What `serve` does in the background: integrate and sign.
        let core = try ModgudCore(pool: database.pool, masterKey: Array(Data(base64Encoded: cli.masterKey)!))
        let integrator = AuditLogIntegrator(pool: database.pool, signer: core.auditKeys, settings: .init(checkpointLeaves: 1))
        while case .applied = try await integrator.step(AuditLogIntegrator.name) {}
        await integrator.shutdown()

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("audit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let state = folder.appendingPathComponent("state.json").path
        let first = try cli.ok(["audit", "verify", "acme", "--state", state])
        XCTAssertTrue(first.hasSuffix("OK\n"), first)
        let size = try XCTUnwrap(first.firstMatch(of: /(\d+) leaves, (\d+) checked/))
        XCTAssertEqual(size.1, size.2, "the first run reads every leaf")
        let resumed = try cli.ok(["audit", "verify", "acme", "--state", state])
        XCTAssertTrue(resumed.contains("\(size.1) leaves, 0 checked"), "the second run resumes where the first ended: \(resumed)")

        let checkpoint = try cli.run(["audit", "checkpoint", "acme"])
        XCTAssertEqual(checkpoint.status, 0, checkpoint.error)
        XCTAssertTrue(checkpoint.output.hasPrefix("audit.modgud/acme/"), checkpoint.output)
        let key = try XCTUnwrap(checkpoint.error.firstMatch(of: /verifier key: (\S+)/)).1
        let held = folder.appendingPathComponent("acme.checkpoint").path
        XCTAssertTrue(FileManager.default.createFile(atPath: held, contents: Data(checkpoint.output.utf8)))
        XCTAssertTrue(try cli.ok(["audit", "verify", "acme", "--checkpoint", held, "--key", String(key)]).hasSuffix("OK\n"))
        let stranger = "audit.modgud/acme/00000000+01020304+" + Data([0x01] + [UInt8](repeating: 9, count: 32)).base64EncodedString()
        let strange = try cli.run(["audit", "verify", "acme", "--key", stranger])
        XCTAssertEqual(strange.status, 1)
        XCTAssertTrue(strange.output.contains("FAILED at checkpoint of size \(size.1): no signature by audit.modgud/acme/00000000"), strange.output)

        let target = try await database.pool.query("SELECT min(position) FROM events WHERE realm = 'acme'").first!.decode(Int64.self, at: 0)
        _ = try await database.pool.query("UPDATE events SET metadata = '{\"actor\": \"someone else\"}' WHERE position = \(target)")
        let tampered = try cli.run(["audit", "verify", "acme"])
        XCTAssertEqual(tampered.status, 1)
        XCTAssertTrue(tampered.output.contains("FAILED at position \(target), leaf 0"), tampered.output)
        XCTAssertTrue(try cli.fails(["audit", "checkpoint", "nowhere"]).contains("no checkpoint"))
    }
}
