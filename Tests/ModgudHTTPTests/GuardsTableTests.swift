import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 65: docs/api.md's table of the guards beyond the guide matches the code. Each row's
/// default is the code's default, and each guard, turned on as its row says, refuses with the
/// status and error its row prints.
final class GuardsTableTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    struct Row {
        var guardName: String
        var defaultValue: String
        var turnedOnBy: String
        var answer: String
        /// The answer's HTTP status and OAuth error, as the row prints them.
        var status: Int { Int(answer.firstMatch(of: /\d{3}/).map { String($0.0) } ?? "") ?? 0 }
        var error: String? {
            ["insufficient_user_authentication", "invalid_client_attestation", "invalid_dpop_proof", "invalid_token"].first { answer.contains($0) }
        }
    }

    /// The table's rows, read from docs/api.md.
    static func rows() throws -> [Row] {
        let text = try String(contentsOf: DeploymentFilesTests.root.appendingPathComponent("docs/api.md"), encoding: .utf8)
        let section = try XCTUnwrap(text.components(separatedBy: "## Guards beyond the guide").dropFirst().first).components(separatedBy: "\n## ")[0]
        return section.split(separator: "\n").filter { $0.hasPrefix("| ") && !$0.hasPrefix("| Guard") }.map { line in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            return Row(guardName: cells[1], defaultValue: cells[2], turnedOnBy: cells[3], answer: cells[5])
        }
    }

    func testTheTableNamesEveryGuardWithTheCodesDefaults() throws {
        let rows = Dictionary(uniqueKeysWithValues: try Self.rows().map { ($0.guardName, $0) })
        XCTAssertEqual(Set(rows.keys), ["Passkey step-up", "Account audience", "Client attestation", "DPoP", "Recovery-session limits"])
        let client = ClientSettings(type: .public, grants: [.otp], allowedScopes: [])
        XCTAssertEqual(rows["Passkey step-up"]?.defaultValue, AccountGuards().passkeyStepUp ? "on" : "off")
        XCTAssertEqual(rows["Account audience"]?.defaultValue, AccountGuards().accountAudience ? "on" : "off")
        XCTAssertEqual(rows["Client attestation"]?.defaultValue, client.clientAttestation.rawValue)
        XCTAssertEqual(rows["DPoP"]?.defaultValue, client.dpop.rawValue)
        XCTAssertEqual(rows["Recovery-session limits"]?.defaultValue, "always")
        XCTAssertTrue(rows["Passkey step-up"]?.turnedOnBy.contains("Guards.PasskeyStepUp") == true)
        XCTAssertTrue(rows["Account audience"]?.turnedOnBy.contains("Guards.AccountAudience") == true)
        XCTAssertTrue(rows["Client attestation"]?.turnedOnBy.contains("ClientAttestation: required") == true)
        XCTAssertTrue(rows["DPoP"]?.turnedOnBy.contains("Dpop: required") == true)
    }

    /// Each guard turned on through the admin API member its row names, then met by a
    /// guide-shaped request: the row's status and error.
    func testEachGuardTurnedOnAsItsRowSaysAnswersAsItsRowSays() async throws {
        let rows = Dictionary(uniqueKeysWithValues: try Self.rows().map { ($0.guardName, $0) })
        harness = try await SeedWalk.makeHarness()
        let harness = harness!
        let walk = SeedWalk(harness: harness)
        let admin: HTTPFields = [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"]
        try await harness.app.test(.live) { client in
            let session = try await walk.signInWithCode(client, "ada@example.com", number: 1, resource: SeedWalk.api, step: "a session")
            let token = try XCTUnwrap(session.json["access_token"] as? String)
            let enrolled = try await walk.enroll(client, token: token, name: "phone")
            let passkey = try XCTUnwrap(enrolled.id)

            // Passkey step-up and account audience: realm `Guards`, through the admin API.
            let patched = try await H.call(
                client, .patch, "/admin/api/realms/dev", #"{"Guards":{"PasskeyStepUp":true,"AccountAudience":false}}"#, headers: admin)
            XCTAssertEqual(patched.status, .ok, patched.body)
            harness.clock.advance(11 * 60)
            let stale = try await H.call(client, .delete, "/connect/passkey/\(passkey)", "", headers: SeedWalk.bearer(token))
            try Self.assert(stale, rows["Passkey step-up"])
            _ = try await H.call(client, .patch, "/admin/api/realms/dev", #"{"Guards":{"PasskeyStepUp":false,"AccountAudience":true}}"#, headers: admin)
            let narrowed = try await H.call(client, .get, "/connect/passkey", "", headers: SeedWalk.bearer(token))
            try Self.assert(narrowed, rows["Account audience"])

            // Client attestation and DPoP: the client's settings, through the admin API.
            for (member, row) in [(#"{"ClientAttestation":"required"}"#, "Client attestation"), (#"{"Dpop":"required"}"#, "DPoP")] {
                let changed = try await H.call(client, .patch, "/admin/api/realms/dev/clients/\(SeedWalk.clientID)", member, headers: admin)
                XCTAssertEqual(changed.status, .ok, changed.body)
                let refused = try await walk.redeemCode(client, "ada@example.com", "123456")
                try Self.assert(refused, rows[row])
                let reset = #"{"ClientAttestation":"off","Dpop":"allowed"}"#
                _ = try await H.call(client, .patch, "/admin/api/realms/dev/clients/\(SeedWalk.clientID)", reset, headers: admin)
            }
        }
    }

    static func assert(_ reply: H.Reply, _ row: Row?, file: StaticString = #filePath, line: UInt = #line) throws {
        let row = try XCTUnwrap(row, file: file, line: line)
        XCTAssertEqual(Int(reply.status.code), row.status, "\(row.guardName): \(reply.body)", file: file, line: line)
        let error = try XCTUnwrap(row.error, "\(row.guardName): the row names no error", file: file, line: line)
        let said = reply.headers[values: .wwwAuthenticate].joined(separator: " ") + " " + reply.body
        XCTAssertTrue(said.contains(error), "\(row.guardName): expected \(error) in \(said)", file: file, line: line)
    }
}
