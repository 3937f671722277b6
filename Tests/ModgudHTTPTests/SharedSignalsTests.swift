import AsyncTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudService
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
        let (_, secret) = try await harness.core.administration.clients.create(
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

    /// A receiver that is down gets every SET afterwards, in log order, each once retried; a
    /// SET the receiver refuses (400) is dead at once, listed for the operator, and goes out
    /// with the same jti once retried.
    func testADownReceiverGetsEverythingInOrderAndARefusedSETIsDeadUntilRetried() async throws {
        harness = try await EmailSignInHarness(issuerScheme: "http")
        let harness = self.harness!
        let secret = try await receiverClient("receiver")
        let ada = try await harness.registerUser("ada@example.com")
        background = SignalBackground.start(harness.core)
        let admin = harness.core.administration
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let receiver = try SSFReceiver(issuer: "http://localhost:\(port)", clientID: "receiver", secret: secret, mode: "push")
            _ = try await receiver.waitFor("the verification SET") { $0.event == "verification" }
            try receiver.setDown(true)
            for action in [UserAdministration.UserAction.disable, .enable, .logoutEverywhere, .disable, .enable] {
                _ = try await admin.users.apply(action, realm: "dev", userID: ada, metadata: .init())
            }
            _ = try await Eventually.value("the first SET retried while the receiver is down") {
                let attempts = try await harness.core.pool.query("SELECT coalesce(max(attempts), 0) FROM ssf_outbox").first?.decode(Int.self, at: 0) ?? 0
                return attempts >= 2 ? true : nil
            }
            try receiver.setDown(false)
            let expected = ["account-disabled", "session-revoked", "account-enabled", "session-revoked", "account-disabled", "session-revoked", "account-enabled"]
            _ = try await Eventually.value("all seven SETs after the outage") { try receiver.received().count >= 1 + expected.count ? true : nil }
            let received = try receiver.received().dropFirst()
            XCTAssertEqual(received.map(\.event), expected, "in log order")
            let positions = received.compactMap { Int($0.claims["txn"] as? String ?? "") }
            XCTAssertEqual(positions, positions.sorted(), "txn (the log position) rises")
            XCTAssertEqual(Set(received.map(\.jti)).count, expected.count)

            // The receiver refuses SETs sent with the wrong credential (400): dead at once.
            let token = try await Self.receiverToken(server, secret: secret)
            let headers: HTTPFields = [.authorization: "Bearer \(token)", .contentType: "application/json"]
            let current = try await H.call(server, .get, "/ssf/stream?stream_id=\(receiver.streamID)", "", headers: headers)
            let endpoint = try XCTUnwrap((current.json["delivery"] as? [String: Any])?["endpoint_url"] as? String, current.body)
            func credential(_ value: String) async throws {
                let patch = #"{"stream_id":"\#(receiver.streamID)","delivery":{"method":"urn:ietf:rfc:8935","endpoint_url":"\#(endpoint)","authorization_header":"\#(value)"}}"#
                let patched = try await H.call(server, .patch, "/ssf/stream", patch, headers: headers)
                XCTAssertEqual(patched.status, .ok, patched.body)
            }
            try await credential("Bearer wrong")
            _ = try await admin.users.apply(.disable, realm: "dev", userID: ada, metadata: .init())
            let outbox = SignalOutbox(pool: harness.core.pool)
            let dead = try await Eventually.value("two dead SETs") { () async throws -> [SignalOutbox.DeadSET]? in
                let dead = try await outbox.dead()
                return dead.count == 2 ? dead : nil
            }
            XCTAssertEqual(Set(dead.map(\.event)), ["account-disabled", "session-revoked"])
            XCTAssertTrue(dead.allSatisfy { $0.attempts == 1 && ($0.lastError ?? "").hasPrefix("400") }, "\(dead)")
            try await credential("Bearer receiver-secret")
            let retried = try await outbox.retryDead(streamID: receiver.streamID)
            XCTAssertEqual(retried, 2)
            for set in dead {
                _ = try await receiver.waitFor("the retried \(set.event)") { $0.jti == set.jti }
            }
            XCTAssertEqual(try receiver.refusals(), [], "every SET it checked was valid")
        }
    }

    static func receiverToken(_ client: some TestClientProtocol, secret: String) async throws -> String {
        var headers = H.form
        headers[.authorization] = "Basic " + Data("receiver:\(secret)".utf8).base64EncodedString()
        let reply = try await H.call(client, .post, "/connect/token", "grant_type=client_credentials&scope=ssf.manage", headers: headers)
        return try XCTUnwrap(reply.json["access_token"] as? String, reply.body)
    }
}
