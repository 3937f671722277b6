import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import WebAuthnTesting
import XCTest

/// Issue 66: docs/guides/genuine-apps.md's table "The draft, section by section" says what
/// discovery publishes for attestation-based client authentication and which test shows each
/// section. This test reads the table and the discovery document of a running server: every
/// attestation member discovery publishes is in the table, every value the table lists is
/// published, and every test it names exists.
final class DraftSectionsTableTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The table's rows: the metadata cell's claims and the test cell's names.
    struct Row {
        var section: String
        var claims: [(name: String, exact: Bool, values: [String])]
        var tests: [String]
    }

    static func backticked(_ text: Substring) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    static func rows() throws -> [Row] {
        let guide = try String(contentsOf: root.appendingPathComponent("docs/guides/genuine-apps.md"), encoding: .utf8)
        let section = try XCTUnwrap(guide.components(separatedBy: "### The draft, section by section").dropFirst().first)
        var rows: [Row] = []
        for line in section.split(separator: "\n") where line.hasPrefix("| ") && !line.hasPrefix("| Section") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 5 else { continue }
            var claims: [(String, Bool, [String])] = []
            for claim in cells[3].split(separator: ";") {
                let names = backticked(claim)
                guard let name = names.first else { continue }
                claims.append((name, claim.contains(" = "), Array(names.dropFirst())))
            }
            rows.append(Row(section: cells[1], claims: claims, tests: backticked(Substring(cells[4]))))
        }
        return rows
    }

    func testTheTableMatchesWhatDiscoveryPublishesAndNamesTestsThatExist() async throws {
        let rows = try Self.rows()
        XCTAssertGreaterThanOrEqual(rows.count, 10, "the table has a row per section")
        harness = try await ClientAttestationTests.start(try PlatformAttestationForge())
        let harness = self.harness!
        let discovery = try await harness.app.test(.router) { client in
            try await H.call(client, .get, "/.well-known/openid-configuration", "", headers: [:]).json
        }
        var listed: Set<String> = []
        for row in rows {
            for claim in row.claims {
                listed.insert(claim.name)
                let published = discovery[claim.name]
                XCTAssertNotNil(published, "\(row.section): discovery does not publish \(claim.name)")
                guard !claim.values.isEmpty else { continue }
                let values = try XCTUnwrap(published as? [String], claim.name)
                if claim.exact {
                    XCTAssertEqual(Set(values), Set(claim.values), "\(row.section): \(claim.name)")
                } else {
                    XCTAssertTrue(Set(claim.values).isSubset(of: values), "\(row.section): \(claim.name) lacks some of \(claim.values)")
                }
            }
        }
        // The other way: every attestation member discovery publishes is in the table.
        for name in discovery.keys where name.hasPrefix("client_attestation_") || name == "challenge_endpoint" {
            XCTAssertTrue(listed.contains(name), "discovery publishes \(name), which the table does not list")
        }
        let methods = try XCTUnwrap(discovery["token_endpoint_auth_methods_supported"] as? [String]).filter { $0.hasPrefix("attest_jwt") }
        let claimed = rows.flatMap(\.claims).filter { $0.name == "token_endpoint_auth_methods_supported" }.flatMap(\.values)
        XCTAssertEqual(Set(methods), Set(claimed), "the attestation auth methods published and listed")
        // Every test the table names exists in Tests/.
        let sources = try FileManager.default.subpathsOfDirectory(atPath: Self.root.appendingPathComponent("Tests").path)
            .filter { $0.hasSuffix(".swift") }
            .map { try String(contentsOf: Self.root.appendingPathComponent("Tests").appendingPathComponent($0), encoding: .utf8) }
            .joined(separator: "\n")
        for test in Set(rows.flatMap(\.tests)) {
            XCTAssertTrue(sources.contains("func \(test)(") || sources.contains("class \(test):"), "the table names \(test), which no test defines")
        }
    }

    func testTheChallengeEndpointHandsOutAChallengeAndADPoPNonce() async throws {
        harness = try await ClientAttestationTests.start(try PlatformAttestationForge())
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            let reply = try await H.call(client, .post, "/connect/attestation/challenge", "", headers: [:])
            XCTAssertEqual(reply.status, .ok, reply.body)
            XCTAssertFalse((reply.json["attestation_challenge"] as? String ?? "").isEmpty, reply.body)
            XCTAssertEqual(reply.headers[.cacheControl], "no-store")
            let nonce = try XCTUnwrap(reply.headers[HTTPField.Name("DPoP-Nonce")!], "a DPoP nonce comes with the challenge")
            XCTAssertEqual(nonce, harness.core.dpop?.currentNonce, "the server's current nonce")
        }
    }
}
