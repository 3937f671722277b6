import EventSourcing
import EventStorePostgres
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
@testable import ModgudService
import TransparencyLog
import XCTest

/// The audit log's admin routes (issue 28), checked by a verifier that is not ours: a Python
/// script written from the documented formats (`Tests/Support/verify_audit_checkpoint.py`)
/// checks the checkpoint's signature and an inclusion proof of a real event.
final class AuditLogAPITests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    func testACheckpointAndAnInclusionProofVerifyInAnIndependentVerifier() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let admin: HTTPFields = [.authorization: "Bearer \(H.adminToken)"]
        try await harness.app.test(.live) { client in
            _ = try await H.requestCode(client, "audited@example.com")
            let signUp = try await H.redeemCode(client, "audited@example.com", try await harness.code(for: "audited@example.com"))
            XCTAssertEqual(signUp.status, .ok, signUp.body)
            let none = try await H.call(client, .get, "/admin/api/realms/dev/audit/checkpoint", "", headers: admin)
            XCTAssertEqual(none.status, .notFound, "no checkpoint before the integrator ran")

            let integrator = AuditLogIntegrator(
                pool: harness.core.pool, signer: harness.core.auditKeys, settings: .init(checkpointInterval: .seconds(3600), checkpointLeaves: 1))
            while case .applied = try await integrator.step(AuditLogIntegrator.name) {}
            await integrator.shutdown()

            let checkpoint = try await H.call(client, .get, "/admin/api/realms/dev/audit/checkpoint", "", headers: admin)
            XCTAssertEqual(checkpoint.status, .ok, checkpoint.body)
            let size = try XCTUnwrap(checkpoint.json["tree_size"] as? Int)
            XCTAssertTrue((checkpoint.json["checkpoint"] as? String)?.hasPrefix("audit.modgud/dev/") == true)
            let event = try await Self.event(harness, offset: size / 2)
            let position = try XCTUnwrap(event["position"] as? Int64)
            let inclusion = try await H.call(client, .get, "/admin/api/realms/dev/audit/proof/inclusion?position=\(position)", "", headers: admin)
            XCTAssertEqual(inclusion.status, .ok, inclusion.body)
            XCTAssertEqual(inclusion.json["tree_size"] as? Int, size)

            let verdict = try Self.verify(checkpoint: checkpoint.body, inclusion: inclusion.body, event: event)
            XCTAssertEqual(verdict, "ok")
            // A proof with one hash changed, or another event's content, fails there too.
            var forged = inclusion.json
            var path = try XCTUnwrap(forged["audit_path"] as? [String])
            path[0] = Data(MerkleHash.leaf([1])).base64EncodedString()
            forged["audit_path"] = path
            let forgedBody = String(decoding: try JSONSerialization.data(withJSONObject: forged), as: UTF8.self)
            XCTAssertTrue(try Self.verify(checkpoint: checkpoint.body, inclusion: forgedBody, event: event).hasPrefix("FAIL"))
            var edited = event
            edited["payload"] = "{}"
            XCTAssertTrue(try Self.verify(checkpoint: checkpoint.body, inclusion: inclusion.body, event: edited).hasPrefix("FAIL"))

            let consistency = try await H.call(client, .get, "/admin/api/realms/dev/audit/proof/consistency?from=1&to=\(size)", "", headers: admin)
            XCTAssertEqual(consistency.status, .ok, consistency.body)
            XCTAssertEqual(consistency.json["second"] as? Int, size)

            for (uri, status, title) in [
                ("/admin/api/realms/dev/audit/proof/inclusion?position=999999", HTTPResponse.Status.notFound, "AuditLog.NotFound"),
                ("/admin/api/realms/dev/audit/proof/inclusion?position=x", .badRequest, "Request.InvalidParameter"),
                ("/admin/api/realms/dev/audit/proof/inclusion", .badRequest, "Request.MissingParameter"),
                ("/admin/api/realms/dev/audit/proof/inclusion?position=\(position)&size=\(size + 100)", .badRequest, "AuditLog.SizeOutOfRange"),
                ("/admin/api/realms/dev/audit/proof/consistency?from=0&to=\(size)", .badRequest, "AuditLog.SizeOutOfRange"),
            ] {
                let reply = try await H.call(client, .get, uri, "", headers: admin)
                XCTAssertEqual(reply.status, status, uri + " " + reply.body)
                XCTAssertEqual(reply.json["title"] as? String, title, uri)
            }
            let anonymous = try await H.call(client, .get, "/admin/api/realms/dev/audit/checkpoint", "", headers: [:])
            XCTAssertEqual(anonymous.status, .unauthorized)
        }
    }

    /// The realm's event at `offset` in log order, with the fields the documented leaf covers.
    static func event(_ harness: EmailSignInHarness, offset: Int) async throws -> [String: Any] {
        let row = try await harness.core.pool.query(
            """
            SELECT realm, position, stream_id, stream_type, stream_version, type, revision::int8, payload::text, metadata::text,
                   (extract(epoch FROM recorded_at) * 1000000)::int8
            FROM events WHERE realm = 'dev' ORDER BY tx_id, position OFFSET \(offset) LIMIT 1
            """
        ).first!
        return [
            "realm": try row.decode(String.self, at: 0), "position": try row.decode(Int64.self, at: 1), "stream_id": try row.decode(String.self, at: 2),
            "stream_type": try row.decode(String.self, at: 3), "stream_version": try row.decode(Int64.self, at: 4), "type": try row.decode(String.self, at: 5),
            "revision": try row.decode(Int64.self, at: 6), "payload": try row.decode(String.self, at: 7), "metadata": try row.decode(String.self, at: 8),
            "recorded_at_us": try row.decode(Int64.self, at: 9),
        ]
    }

    /// Runs the Python verifier; its one line of output.
    static func verify(checkpoint: String, inclusion: String, event: [String: Any]) throws -> String {
        let input = #"{"checkpoint": \#(checkpoint), "inclusion": \#(inclusion), "event": "#
            + String(decoding: try JSONSerialization.data(withJSONObject: event), as: UTF8.self) + "}"
        return try PythonScript.run("verify_audit_checkpoint.py", input: input)
    }
}
