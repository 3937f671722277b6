import AsyncTestSupport
import Foundation
import MailTestSupport
import ModgudClient
import PQ
import PostgresTestSupport
import TransparencyLog
import WebAuthn
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 71, test (b) as an operator plays it: `modgud realm move red --to b` while an instance
/// serves realm red from cell a (its own cluster, `wal_level=logical`), then what must hold in
/// cell b: a refresh token spent before the move stays spent, a DPoP proof used before the move
/// is refused as replayed, live sessions refresh, the audit log's leaves and Merkle root equal
/// the source's and `audit verify` passes in both; `modgud realm retire` then empties cell a.
/// The move under load, through a balancer and two instances, is `ops/cells-test`.
final class RealmMoveTests: CellTestCase {
    func testARealmMovesToAnotherCellWithItsSpentTokensAndProofsStillRefused() async throws {
        let source = try await RestartableDatabase(maxConnections: 4, settings: ["wal_level": "logical"])
        clusters.append(source)
        for _ in 0..<2 { databases.append(try await TestDatabase.create(maxConnections: 4)) }
        let (target, directory) = (databases[0], databases[1].url)
        let (cellA, cellB) = (CLIRunner(databaseURL: source.url), CLIRunner(databaseURL: target.url))
        try cellA.ok(["realm", "create", "red", "--host", "localhost", "--native-grants", "true"])
        try cellA.ok(["realm", "rotate-key", "red"])
        try cellA.ok(["client", "create", "red", "app", "--grant", "urn:cocoar:otp", "--grant", "refresh_token", "--scope", "openid", "--scope", "offline_access"])
        let operator_ = CLIRunner(databaseURL: "postgresql://nowhere.invalid/none")
        try operator_.ok(["cell", "add", "a", "--url", source.url, "--directory-url", directory])
        try operator_.ok(["cell", "add", "b", "--url", target.url, "--directory-url", directory])
        try cellB.ok(["realm", "create", "blue", "--host", "127.0.0.1"])
        try operator_.ok(["cell", "place", "red", "--cell", "a", "--directory-url", directory])
        let sessions = try cellA.ok(["bench", "sessions", "red", "app", "--count", "3", "--dpop"]).split(separator: "\n").map(RefreshChainLine.init)

        let port = try SMTPSink.freePort()
        server = try operator_.launch(
            ["serve"],
            environment: ["MODGUD_DIRECTORY_URL": directory, "MODGUD_PORT": "\(port)", "MODGUD_ISSUER_SCHEME": "http", "MODGUD_MAIL_TRANSPORT": "console"])
        let issuer = "http://localhost:\(port)"
        try await LoginCommandTests.waitUntilReady(issuer)

        // Before the move, in cell a: session 0 spends its token; session 1's proof is used once.
        let spent = sessions[0].token
        let first = try await refresh(issuer, sessions[0], proof: nil)
        XCTAssertEqual(first.status, 200, "\(first.body)")
        // Its iat 50 s ahead: fresh (within the 60 s window) for 110 s, so a replay after a slow
        // move is refused for its jti, not for its age.
        let usedProof = try sessions[1].key.proof(method: "POST", url: URL(string: issuer + "/connect/token")!, now: Date().addingTimeInterval(50))
        let second = try await refresh(issuer, sessions[1], proof: usedProof)
        XCTAssertEqual(second.status, 200, "\(second.body)")
        let live = RefreshChainLine(token: try XCTUnwrap(second.body["refresh_token"] as? String), key: sessions[1].key)

        let moved = try operator_.ok(["realm", "move", "red", "--to", "b", "--directory-url", directory])
        XCTAssertTrue(moved.contains("moved realm red to cell b"), moved)
        XCTAssertTrue(moved.contains("fence window"), moved)
        let cells = try operator_.ok(["cell", "list", "--directory-url", directory])
        XCTAssertTrue(cells.split(separator: "\n").contains { $0.hasPrefix("b\t") && $0.hasSuffix("\t" + target.url) && $0.contains("\tred\t") }, cells)

        // Served from cell b (the source's copy is fenced: a write there answers 503 until the instance follows).
        let fresh = try await Eventually.value("session 2 refreshes after the flip", every: .milliseconds(100)) {
            let answer = try await self.refresh(issuer, sessions[2], proof: nil)
            return answer.status == 503 ? nil : answer
        }
        XCTAssertEqual(fresh.status, 200, "\(fresh.body)")
        let replayedProof = try await refresh(issuer, live, proof: usedProof)
        XCTAssertEqual(replayedProof.status, 400)
        XCTAssertEqual(replayedProof.body["error"] as? String, "invalid_dpop_proof", "the proof's jti was spent in cell a: \(replayedProof.body)")
        let replayedToken = try await refresh(issuer, RefreshChainLine(token: spent, key: sessions[0].key), proof: nil)
        XCTAssertEqual(replayedToken.status, 400)
        XCTAssertEqual(replayedToken.body["error"] as? String, "invalid_grant", "spent in cell a: \(replayedToken.body)")
        let liveAfter = try await refresh(issuer, live, proof: nil)
        XCTAssertEqual(liveAfter.status, 200, "the session whose proof was replayed is live: \(liveAfter.body)")
        try await checkAuditLogs(source: source.pool, target: target.pool, cellA: cellA, cellB: cellB)

        let retired = try operator_.ok(["realm", "retire", "red", "--cell", "a", "--directory-url", directory])
        XCTAssertTrue(retired.contains("realm red retired in cell a"), retired)
        for table in ["events", "refresh_tokens", "signing_key_secrets", "audit_leaves"] {
            let left = try await source.pool.query("SELECT count(*) FROM \(identifier: table) WHERE \(identifier: table == "events" || table == "audit_leaves" ? "realm" : "realm_id") = 'red'")
            XCTAssertEqual(try left.first!.decode(Int.self, at: 0), 0, "\(table) keeps rows of red in cell a after the retirement")
        }
        let refused = try operator_.fails(["realm", "retire", "red", "--cell", "b", "--directory-url", directory])
        XCTAssertTrue(refused.contains("places realm red in cell b"), refused)
    }

    /// The target's integrator has taken every moved event: the same leaves in the same order,
    /// so the same RFC 9162 root at the source's size; `audit verify` passes in both cells.
    func checkAuditLogs(source: PQPool, target: PQPool, cellA: CLIRunner, cellB: CLIRunner) async throws {
        let size = try await source.query("SELECT count(*) FROM audit_leaves WHERE realm = 'red'").first!.decode(Int64.self, at: 0)
        XCTAssertGreaterThan(size, 0)
        try await Eventually.wait("cell b's audit log has the moved leaves") {
            (try? await target.query("SELECT count(*) FROM audit_leaves WHERE realm = 'red'").first!.decode(Int64.self, at: 0)) ?? 0 >= size
        }
        let leaves: @Sendable (PQPool) async throws -> [[UInt8]] = { pool in
            try await pool.query("SELECT encode(hash, 'hex') FROM audit_leaves WHERE realm = 'red' AND leaf_index < \(size) ORDER BY leaf_index").rows.map {
                let hex = Array(try $0.decode(String.self, at: 0).utf8)
                return stride(from: 0, to: hex.count, by: 2).map { UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
            }
        }
        let (sourceLeaves, targetLeaves) = (try await leaves(source), try await leaves(target))
        XCTAssertEqual(sourceLeaves, targetLeaves)
        XCTAssertEqual(Self.root(sourceLeaves), Self.root(targetLeaves))
        for (name, cell) in [("a", cellA), ("b", cellB)] {
            let verified = try cell.run(["audit", "verify", "red"])
            XCTAssertEqual(verified.status, 0, "audit verify red in cell \(name): \(verified.output) \(verified.error)")
            XCTAssertTrue(verified.output.contains("OK"), verified.output)
        }
    }

    /// RFC 9162 section 2.1.1: the Merkle tree hash of a list of leaf hashes.
    static func root(_ leaves: [[UInt8]]) -> [UInt8] {
        guard leaves.count > 1 else { return leaves.first ?? [] }
        var split = 1
        while split * 2 < leaves.count { split *= 2 }
        return MerkleHash.node(root(Array(leaves[..<split])), root(Array(leaves[split...])))
    }

    func refresh(_ issuer: String, _ session: RefreshChainLine, proof: String?) async throws -> (status: Int, body: [String: Any]) {
        let endpoint = URL(string: issuer + "/connect/token")!
        var request = URLRequest(url: endpoint)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue(try proof ?? session.key.proof(method: "POST", url: endpoint), forHTTPHeaderField: "DPoP")
        request.httpBody = Data("grant_type=refresh_token&client_id=app&refresh_token=\(session.token)".utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:])
    }
}

/// A line of `modgud bench sessions --dpop`: a refresh token and its session's DPoP key.
struct RefreshChainLine: Sendable {
    var token: String
    var key: SoftwareDPoPKey

    init(token: String, key: SoftwareDPoPKey) {
        self.token = token
        self.key = key
    }

    init(_ line: Substring) {
        let parts = line.split(separator: " ")
        token = String(parts[0])
        key = try! SoftwareDPoPKey(rawRepresentation: Data(Base64URL.decode(parts[1])!))
    }
}
