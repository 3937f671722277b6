import AsyncTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudService
import PQ
import XCTest

/// Issue 30: the Shared Signals transmitter against a receiver written in Python from the
/// specifications (`Tests/Support/ssf_receiver.py`), over a real socket: metadata, stream
/// creation, verification, push and poll delivery, and the SETs of reuse detection, an
/// erasure, a receiver that is down, and the stream management refusals.
final class SharedSignalsTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!
    var background: Task<Void, Never>?

    override func tearDown() async throws {
        background?.cancel()
        await background?.value
        await harness?.close()
    }

    /// A receiver client: confidential, client_credentials, `ssf.manage` (and `email`: it may
    /// see addresses).
    func receiverClient(_ id: String, scopes: Set<String> = ["ssf.manage", "email"]) async throws -> String {
        let (_, secret) = try await AdminService(core: harness.core).createClient(
            realm: "dev", id: id, settings: ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: scopes), metadata: .init())
        return try XCTUnwrap(secret)
    }

    static func signIn(_ client: some TestClientProtocol, _ email: String, harness: EmailSignInHarness, number: Int = 1) async throws -> (access: String, refresh: String) {
        _ = try await H.requestCode(client, email)
        let tokens = try await H.redeemCode(client, email, try await harness.code(for: email, number: number))
        return (try XCTUnwrap(tokens.json["access_token"] as? String, tokens.body), try XCTUnwrap(tokens.json["refresh_token"] as? String, tokens.body))
    }

    /// Presents a spent refresh token after the reuse grace: the family is revoked (reuse).
    static func triggerReuse(_ client: some TestClientProtocol, refresh: String, harness: EmailSignInHarness) async throws {
        let first = try await H.token(client, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", refresh)])
        XCTAssertEqual(first.status, .ok, first.body)
        harness.clock.advance(120)
        let replay = try await H.token(client, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", refresh)])
        XCTAssertEqual(replay.json["error"] as? String, "invalid_grant", replay.body)
    }

    func testPushDeliversReuseDetectionAndErasureWithNothingPersonalAfterward() async throws {
        harness = try await EmailSignInHarness(issuerScheme: "http")
        let harness = self.harness!
        let secret = try await receiverClient("receiver")
        let userID = try await harness.registerUser("ada@example.com")
        background = SignalBackground.start(harness.core)
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let client = server
            let receiver = try SSFReceiver(issuer: "http://localhost:\(port)", clientID: "receiver", secret: secret, mode: "push", format: "email")
            _ = try await receiver.waitFor("the verification SET") { $0.event == "verification" }

            // Reuse detection on a refresh chain: session-revoked naming the user by address
            // and the revoked session.
            let tokens = try await Self.signIn(client, "ada@example.com", harness: harness)
            try await Self.triggerReuse(client, refresh: tokens.refresh, harness: harness)
            let revoked = try await receiver.waitFor("session-revoked for the reused family") {
                $0.event == "session-revoked" && (($0.claims["sub_id"] as? [String: Any])?["session"] != nil)
            }
            let subject = try XCTUnwrap(revoked.claims["sub_id"] as? [String: Any])
            XCTAssertEqual(subject["format"] as? String, "complex")
            XCTAssertEqual((subject["user"] as? [String: Any])?["email"] as? String, "ada@example.com", "the receiver may see addresses")
            let event = try XCTUnwrap((revoked.claims["events"] as? [String: Any])?.values.first as? [String: Any])
            XCTAssertEqual(event["initiating_entity"] as? String, "policy")

            // Erasure: account-purged, and no address in it or in any SET after it.
            let admin: HTTPFields = [.authorization: "Bearer \(H.adminToken)"]
            let erased = try await H.call(client, .delete, "/admin/api/realms/dev/users/\(userID.uuidString.lowercased())?erase=true", "", headers: admin)
            XCTAssertEqual(erased.status, .ok, erased.body)
            let purged = try await receiver.waitFor("account-purged") { $0.event == "account-purged" }
            let purgedSubject = try XCTUnwrap(purged.claims["sub_id"] as? [String: Any])
            XCTAssertEqual(purgedSubject["format"] as? String, "iss_sub", "the address is gone: the SET names the user by iss_sub")
            XCTAssertEqual(purgedSubject["sub"] as? String, userID.uuidString.lowercased())
            // The erasure's own session revocation comes after the purge (log order on one stream).
            let all = try receiver.received()
            let purgedIndex = try XCTUnwrap(all.firstIndex { $0.jti == purged.jti })
            _ = try await receiver.waitFor("session-revoked of the erasure") { $0.event == "session-revoked" && $0.json.contains("erased") }
            for set in try receiver.received()[purgedIndex...] {
                XCTAssertFalse(set.json.contains("ada@example.com"), "a SET after the purge names the address: \(set.json)")
            }
            XCTAssertEqual(try receiver.refusals(), [], "every SET passed the receiver's checks")
        }
    }

    func testPollDeliversAndAcknowledgementsEmptyTheStream() async throws {
        harness = try await EmailSignInHarness(issuerScheme: "http", signalLongPoll: .seconds(2))
        let harness = self.harness!
        let secret = try await receiverClient("poller", scopes: ["ssf.manage"])
        _ = try await harness.registerUser("ada@example.com")
        background = SignalBackground.start(harness.core)
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let receiver = try SSFReceiver(issuer: "http://localhost:\(port)", clientID: "poller", secret: secret, mode: "poll", format: "email")
            _ = try await receiver.waitFor("the verification SET") { $0.event == "verification" }
            let tokens = try await Self.signIn(server, "ada@example.com", harness: harness)
            try await Self.triggerReuse(server, refresh: tokens.refresh, harness: harness)
            let revoked = try await receiver.waitFor("session-revoked") { $0.event == "session-revoked" }
            let user = try XCTUnwrap(((revoked.claims["sub_id"] as? [String: Any])?["user"]) as? [String: Any])
            XCTAssertEqual(user["format"] as? String, "iss_sub", "a receiver without the email scope gets iss_sub, whatever it asked for")
            // Everything received was acknowledged by the next poll: the outbox empties.
            _ = try await Eventually.value("the poll stream's outbox is empty") {
                let left = try await harness.core.pool.query("SELECT count(*) FROM ssf_outbox WHERE stream_id = \(receiver.streamID)").first?.decode(Int.self, at: 0)
                return left == 0 ? true : nil
            }
            XCTAssertEqual(try receiver.refusals(), [])
        }
    }
}
