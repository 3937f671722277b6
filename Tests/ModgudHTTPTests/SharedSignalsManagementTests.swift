import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
@testable import ModgudService
import XCTest

/// Issue 30: the Stream Management API's answers (OpenID SSF 1.0 section 8) and what a
/// stream's status and subjects do to the SETs it holds. The transmitter is stepped by hand
/// here, so each assertion follows a known point in the log.
final class SharedSignalsManagementTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static func token(_ client: some TestClientProtocol, _ id: String, _ secret: String, scope: String) async throws -> String {
        let basic = "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString()
        var headers = H.form
        headers[.authorization] = basic
        let reply = try await H.call(client, .post, "/connect/token", "grant_type=client_credentials&scope=\(scope)", headers: headers)
        return try XCTUnwrap(reply.json["access_token"] as? String, reply.body)
    }

    func client(_ id: String, scopes: Set<String>) async throws -> String {
        let (_, secret) = try await harness.core.administration.clients.create(
            realm: "dev", id: id, settings: ClientSettings(type: .confidential, grants: [.clientCredentials], allowedScopes: scopes), metadata: .init())
        return try XCTUnwrap(secret)
    }

    static func headers(_ token: String) -> HTTPFields {
        [.authorization: "Bearer \(token)", .contentType: "application/json"]
    }

    /// Applies everything the log holds to the transmitter's tables.
    static func transmit(_ harness: EmailSignInHarness) async throws {
        let transmitter = SignalTransmitter(pool: harness.core.pool)
        while case .applied = try await transmitter.step(SignalTransmitter.name) {}
        await transmitter.shutdown()
    }

    static func poll(_ client: some TestClientProtocol, _ token: String, _ stream: String, ack: [String] = []) async throws -> [String: String] {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["returnImmediately": true, "ack": ack]), as: UTF8.self)
        let reply = try await H.call(client, .post, "/ssf/poll/\(stream)", body, headers: Self.headers(token))
        XCTAssertEqual(reply.status, .ok, reply.body)
        return reply.json["sets"] as? [String: String] ?? [:]
    }

    func testWhoMayManageAStreamAndWhatACreateRefuses() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let secret = try await client("receiver", scopes: ["ssf.manage", "ssf.read"])
        let readerSecret = try await client("reader", scopes: ["ssf.read"])
        try await harness.app.test(.router) { client in
            let anonymous = try await H.call(client, .get, "/ssf/stream", "", headers: [:])
            XCTAssertEqual(anonymous.status, .unauthorized)
            let reader = try await Self.token(client, "reader", readerSecret, scope: "ssf.read")
            let readerCreate = try await H.call(client, .post, "/ssf/stream", "{}", headers: Self.headers(reader))
            XCTAssertEqual(readerCreate.status, .forbidden, "ssf.read cannot create")
            let reply1 = try await H.call(client, .get, "/ssf/stream", "", headers: Self.headers(reader))
            XCTAssertEqual(reply1.body, "[]", "no stream yet: an empty list")

            let manager = try await Self.token(client, "receiver", secret, scope: "ssf.manage")
            let http = #"{"delivery":{"method":"urn:ietf:rfc:8935","endpoint_url":"http://receiver.example.com/events"}}"#
            let reply2 = try await H.call(client, .post, "/ssf/stream", http, headers: Self.headers(manager))
            XCTAssertEqual(reply2.status, .badRequest, "http off loopback")
            let unknown = #"{"delivery":{"method":"urn:example:carrier-pigeon"}}"#
            let reply3 = try await H.call(client, .post, "/ssf/stream", unknown, headers: Self.headers(manager))
            XCTAssertEqual(reply3.status, .badRequest)
            let extra = #"{"colour":"blue"}"#
            let reply4 = try await H.call(client, .post, "/ssf/stream", extra, headers: Self.headers(manager))
            XCTAssertEqual(reply4.status, .badRequest)

            let push = #"{"delivery":{"method":"urn:ietf:rfc:8935","endpoint_url":"https://receiver.example.com/events","authorization_header":"Bearer s3cret"},"events_requested":["https://schemas.openid.net/secevent/caep/event-type/session-revoked","urn:example:unknown"],"description":"one"}"#
            let created = try await H.call(client, .post, "/ssf/stream", push, headers: Self.headers(manager))
            XCTAssertEqual(created.status, .created, created.body)
            XCTAssertFalse(created.body.contains("s3cret"), "the push credential is never returned")
            XCTAssertNotNil(created.json["stream_id"] as? String)
            XCTAssertEqual(created.json["events_delivered"] as? [String], ["https://schemas.openid.net/secevent/caep/event-type/session-revoked"], "unknown URIs ignored")
            XCTAssertEqual(created.json["aud"] as? String, "receiver")
            let reply5 = try await H.call(client, .post, "/ssf/stream", push, headers: Self.headers(manager))
            XCTAssertEqual(reply5.status, .conflict, "one stream per receiver")
            let sealed = try await harness.core.pool.query("SELECT push_authorization FROM ssf_streams").rows
            XCTAssertTrue(sealed.isEmpty, "not applied before the transmitter runs")
            let log = try await harness.core.pool.query("SELECT payload::text FROM events WHERE type = 'ssf_stream.created'").first?.decode(String.self, at: 0)
            XCTAssertFalse(try XCTUnwrap(log).contains("s3cret"), "the credential reaches the log sealed")
            try await Self.transmit(harness)
            let applied = try await harness.core.pool.query("SELECT push_authorization FROM ssf_streams").first?.decode(String?.self, at: 0)
            XCTAssertFalse(try XCTUnwrap(applied).contains("s3cret"), "and the transmitter's table holds it sealed")
        }
    }

    /// Read, update, replace, status, verification, subjects and delete of one stream.
    func testAStreamsLifeThroughTheManagementAPI() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let secret = try await client("receiver", scopes: ["ssf.manage", "ssf.read"])
        try await harness.app.test(.router) { client in
            let manager = try await Self.token(client, "receiver", secret, scope: "ssf.manage")
            let push = #"{"delivery":{"method":"urn:ietf:rfc:8935","endpoint_url":"https://receiver.example.com/events","authorization_header":"Bearer s3cret"},"events_requested":["https://schemas.openid.net/secevent/caep/event-type/session-revoked","urn:example:unknown"],"description":"one"}"#
            let created = try await H.call(client, .post, "/ssf/stream", push, headers: Self.headers(manager))
            let streamID = try XCTUnwrap(created.json["stream_id"] as? String, created.body)
            let wrong = try await H.call(client, .get, "/ssf/stream?stream_id=nope", "", headers: Self.headers(manager))
            XCTAssertEqual(wrong.status, .notFound)
            let patch = #"{"stream_id":"\#(streamID)","description":"two"}"#
            let patched = try await H.call(client, .patch, "/ssf/stream", patch, headers: Self.headers(manager))
            XCTAssertEqual(patched.json["description"] as? String, "two", patched.body)
            XCTAssertEqual((patched.json["delivery"] as? [String: Any])?["endpoint_url"] as? String, "https://receiver.example.com/events", "PATCH keeps what it does not name")
            let replaced = try await H.call(client, .put, "/ssf/stream", #"{"stream_id":"\#(streamID)"}"#, headers: Self.headers(manager))
            let delivery = try XCTUnwrap(replaced.json["delivery"] as? [String: Any], replaced.body)
            XCTAssertEqual(delivery["method"] as? String, "urn:ietf:rfc:8936", "PUT without delivery: a poll stream")
            XCTAssertEqual(delivery["endpoint_url"] as? String, "https://localhost/ssf/poll/\(streamID)")
            XCTAssertNil(replaced.json["description"], "PUT removes what it lacks")

            let paused = try await H.call(client, .post, "/ssf/status", #"{"stream_id":"\#(streamID)","status":"paused","reason":"maintenance"}"#, headers: Self.headers(manager))
            XCTAssertEqual(paused.json["status"] as? String, "paused", paused.body)
            let status = try await H.call(client, .get, "/ssf/status?stream_id=\(streamID)", "", headers: Self.headers(manager))
            XCTAssertEqual(status.json["reason"] as? String, "maintenance")
            let badStatus = try await H.call(client, .post, "/ssf/status", #"{"stream_id":"\#(streamID)","status":"asleep"}"#, headers: Self.headers(manager))
            XCTAssertEqual(badStatus.status, .badRequest)

            let reply6 = try await H.call(client, .post, "/ssf/verify", #"{"stream_id":"\#(streamID)","state":"x"}"#, headers: Self.headers(manager))
            XCTAssertEqual(reply6.status, .noContent)
            let tooSoon = try await H.call(client, .post, "/ssf/verify", #"{"stream_id":"\#(streamID)"}"#, headers: Self.headers(manager))
            XCTAssertEqual(tooSoon.status, .tooManyRequests, "min_verification_interval")
            let nobody = #"{"stream_id":"\#(streamID)","subject":{"format":"email","email":"nobody@example.com"}}"#
            let reply7 = try await H.call(client, .post, "/ssf/subjects/add", nobody, headers: Self.headers(manager))
            XCTAssertEqual(reply7.status, .ok, "unknown: the same answer")
            let reply8 = try await H.call(client, .post, "/ssf/subjects/remove", nobody, headers: Self.headers(manager))
            XCTAssertEqual(reply8.status, .noContent)
            let shapeless = #"{"stream_id":"\#(streamID)","subject":{"email":"x@example.com"}}"#
            let reply9 = try await H.call(client, .post, "/ssf/subjects/remove", shapeless, headers: Self.headers(manager))
            XCTAssertEqual(reply9.status, .badRequest)

            let reply10 = try await H.call(client, .delete, "/ssf/stream?stream_id=\(streamID)", "", headers: Self.headers(manager))
            XCTAssertEqual(reply10.status, .noContent)
            let reply11 = try await H.call(client, .get, "/ssf/status?stream_id=\(streamID)", "", headers: Self.headers(manager))
            XCTAssertEqual(reply11.status, .notFound)
            let again = try await H.call(client, .post, "/ssf/stream", "{}", headers: Self.headers(manager))
            XCTAssertEqual(again.status, .created, "a deleted stream can be created anew")
            XCTAssertNotEqual(again.json["stream_id"] as? String, streamID, "with a new stream_id")
        }
    }

    func testPausedHoldsDisabledDropsAndARemovedSubjectGetsNothing() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let secret = try await client("poller", scopes: ["ssf.manage"])
        let ada = try await harness.registerUser("ada@example.com")
        let bob = try await harness.registerUser("bob@example.com")
        let admin = harness.core.administration
        try await harness.app.test(.router) { client in
            let manager = try await Self.token(client, "poller", secret, scope: "ssf.manage")
            let createdStream = try await H.call(client, .post, "/ssf/stream", "{}", headers: Self.headers(manager))
            let stream = try XCTUnwrap(createdStream.json["stream_id"] as? String)
            func status(_ value: String) async throws {
                let body = #"{"stream_id":"\#(stream)","status":"\#(value)"}"#
                let reply12 = try await H.call(client, .post, "/ssf/status", body, headers: Self.headers(manager))
                XCTAssertEqual(reply12.status, .ok)
            }
            /// The SETs waiting, as (event name, subject's sub or id), acknowledged once read.
            func receive() async throws -> [(event: String, subject: String)] {
                let sets = try await Self.poll(client, manager, stream)
                _ = try await Self.poll(client, manager, stream, ack: Array(sets.keys))
                return try sets.values.map { token in
                    let claims = try Self.claims(token)
                    let uri = try XCTUnwrap((claims["events"] as? [String: Any])?.keys.first)
                    let subject = try XCTUnwrap(claims["sub_id"] as? [String: Any])
                    return (String(uri.split(separator: "/").last!), (subject["sub"] ?? subject["id"]) as? String ?? "")
                }
            }
            func events() async throws -> Set<String> { Set(try await receive().map(\.event)) }
            try await status("paused")
            _ = try await admin.users.apply(.disable, realm: "dev", userID: ada, metadata: .init())
            try await Self.transmit(harness)
            let reply13 = try await events()
            XCTAssertEqual(reply13, [], "a paused stream transmits nothing")
            try await status("enabled")
            try await Self.transmit(harness)
            let reply14 = try await events()
            XCTAssertEqual(reply14, ["account-disabled", "session-revoked"], "and holds what came while paused")

            // Disabled: what waits is dropped, and nothing new is held.
            try await status("disabled")
            _ = try await admin.users.apply(.enable, realm: "dev", userID: ada, metadata: .init())
            try await Self.transmit(harness)
            try await status("enabled")
            try await Self.transmit(harness)
            let reply15 = try await events().contains("account-enabled")
            XCTAssertFalse(reply15, "nothing held while disabled")

            // A removed subject: nothing about that user; the others still come.
            let remove = #"{"stream_id":"\#(stream)","subject":{"format":"opaque","id":"\#(bob.uuidString.lowercased())"}}"#
            let reply16 = try await H.call(client, .post, "/ssf/subjects/remove", remove, headers: Self.headers(manager))
            XCTAssertEqual(reply16.status, .noContent)
            _ = try await admin.users.apply(.disable, realm: "dev", userID: bob, metadata: .init())
            _ = try await admin.users.apply(.disable, realm: "dev", userID: ada, metadata: .init())
            try await Self.transmit(harness)
            let received = try await receive()
            XCTAssertEqual(Set(received.map(\.subject)), [ada.uuidString.lowercased()], "nothing about bob: \(received)")
            XCTAssertEqual(Set(received.map(\.event)), ["account-disabled", "session-revoked"])
        }
    }

    /// A passkey enrolled, renamed and deleted: credential-change create, update and delete,
    /// each naming the user and a FIDO2 credential type.
    func testPasskeyChangesAreCredentialChanges() async throws {
        harness = try await EmailSignInHarness(settings: { $0.primaryDomain = "acme.test" })
        let harness = self.harness!
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "ios",
            settings: ClientSettings(type: .public, grants: [.otp, .passkey, .refreshToken], allowedScopes: ["openid", "offline_access"], rpID: "ios.acme.test"),
            metadata: .init())
        let secret = try await client("poller", scopes: ["ssf.manage"])
        let ada = try await harness.registerUser("ada@example.com")
        let steps = PasskeySteps(harness: harness)
        try await harness.app.test(.router) { client in
            let manager = try await Self.token(client, "poller", secret, scope: "ssf.manage")
            let body = #"{"events_requested":["https://schemas.openid.net/secevent/caep/event-type/credential-change"]}"#
            let created = try await H.call(client, .post, "/ssf/stream", body, headers: Self.headers(manager))
            let stream = try XCTUnwrap(created.json["stream_id"] as? String, created.body)
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            let (_, passkey) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test")
            let renamed = try await H.call(client, .patch, "/connect/passkey/\(passkey)", #"{"DisplayName":"Work phone"}"#, headers: PasskeySteps.bearer(token, json: true))
            XCTAssertEqual(renamed.status, .ok, renamed.body)
            let deleted = try await H.call(client, .delete, "/connect/passkey/\(passkey)", "", headers: PasskeySteps.bearer(token))
            XCTAssertEqual(deleted.status, .noContent, deleted.body)
            try await Self.transmit(harness)
            let sets = try await Self.poll(client, manager, stream)
            func position(_ claims: [String: Any]) -> Int { Int(claims["txn"] as? String ?? "") ?? 0 }
            let events = try sets.values.map { try Self.claims($0) }.sorted { position($0) < position($1) }
            let changes = events.compactMap { ($0["events"] as? [String: Any])?["https://schemas.openid.net/secevent/caep/event-type/credential-change"] as? [String: Any] }
            XCTAssertEqual(changes.map { $0["change_type"] as? String }, ["create", "update", "delete"], "only the requested type, in log order")
            XCTAssertEqual(Set(changes.compactMap { $0["credential_type"] as? String }).count, 1)
            XCTAssertTrue(["fido2-platform", "fido2-roaming"].contains(changes.first?["credential_type"] as? String ?? ""))
            XCTAssertEqual(changes.map { $0["initiating_entity"] as? String }, ["user", "user", "user"])
            for event in events {
                XCTAssertEqual((event["sub_id"] as? [String: Any])?["sub"] as? String, ada.uuidString.lowercased())
                XCTAssertFalse("\(event)".contains("Work phone"), "no passkey name (it may name a person)")
            }
        }
    }

    /// An operator pauses a receiver's stream: the receiver gets a stream-updated SET at once
    /// (SSF 1.0 section 8.1.5) while everything else is held; enabling sends another, then
    /// what was held.
    func testAnOperatorsStatusChangeIsAnnouncedWithStreamUpdated() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let secret = try await client("poller", scopes: ["ssf.manage"])
        let ada = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let manager = try await Self.token(client, "poller", secret, scope: "ssf.manage")
            let created = try await H.call(client, .post, "/ssf/stream", "{}", headers: Self.headers(manager))
            let stream = try XCTUnwrap(created.json["stream_id"] as? String)
            func receive() async throws -> [[String: Any]] {
                let sets = try await Self.poll(client, manager, stream)
                _ = try await Self.poll(client, manager, stream, ack: Array(sets.keys))
                return try sets.values.map { try Self.claims($0) }.sorted { Int($0["txn"] as? String ?? "") ?? 0 < Int($1["txn"] as? String ?? "") ?? 0 }
            }
            func event(_ claims: [String: Any], _ type: SignalEvent) -> [String: Any]? { (claims["events"] as? [String: Any])?[type.uri] as? [String: Any] }
            let signals = harness.core.signalStreams
            _ = try await signals.setStatus(realm: "dev", clientID: "poller", status: .paused, reason: "maintenance", byOperator: true, metadata: .init(actor: "admin:cli"))
            _ = try await harness.core.administration.users.apply(.disable, realm: "dev", userID: ada, metadata: .init())
            try await Self.transmit(harness)
            let paused = try await receive()
            XCTAssertEqual(paused.count, 1, "only the stream-updated SET while paused: \(paused)")
            let update = try XCTUnwrap(paused.first.flatMap { event($0, .streamUpdated) })
            XCTAssertEqual(update["status"] as? String, "paused")
            XCTAssertEqual(update["reason"] as? String, "maintenance")
            XCTAssertEqual(paused.first?["sub_id"] as? [String: String], ["format": "opaque", "id": stream])

            _ = try await signals.setStatus(realm: "dev", clientID: "poller", status: .enabled, reason: nil, byOperator: true, metadata: .init(actor: "admin:cli"))
            try await Self.transmit(harness)
            let resumed = try await receive()
            XCTAssertEqual(Set(resumed.compactMap { ($0["events"] as? [String: Any])?.keys.first?.split(separator: "/").last.map(String.init) }),
                ["account-disabled", "session-revoked", "stream-updated"], "the held SETs and the announcement")
            let receiverPause = try await H.call(client, .post, "/ssf/status", #"{"stream_id":"\#(stream)","status":"paused"}"#, headers: Self.headers(manager))
            XCTAssertEqual(receiverPause.status, .ok)
            try await Self.transmit(harness)
            let quiet = try await receive()
            XCTAssertEqual(quiet.count, 0, "a receiver's own change is not announced to it")
        }
    }

    /// A push stream whose first SET backs off is not leased again until that SET is due,
    /// though the SETs behind it were never tried: no delivery loop spins through an outage.
    func testABackingOffStreamIsNotLeasedUntilItsFirstSETIsDue() async throws {
        harness = try await EmailSignInHarness(issuerScheme: "http")
        let harness = self.harness!
        let secret = try await client("receiver", scopes: ["ssf.manage"])
        let ada = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            let manager = try await Self.token(client, "receiver", secret, scope: "ssf.manage")
            let nobody = #"{"delivery":{"method":"urn:ietf:rfc:8935","endpoint_url":"http://127.0.0.1:1/events"}}"#
            let created = try await H.call(client, .post, "/ssf/stream", nobody, headers: Self.headers(manager))
            XCTAssertEqual(created.status, .created, created.body)
            _ = try await harness.core.administration.users.apply(.disable, realm: "dev", userID: ada, metadata: .init())
            try await Self.transmit(harness)
            let pusher = harness.core.makeSignalPusher(settings: SignalPusher.Settings(initialBackoff: 3600))
            let first = try await pusher.deliverOneStream()
            XCTAssertTrue(first, "the first SET was due: the stream was leased and tried")
            let attempts = try await harness.core.pool.query("SELECT attempts FROM ssf_outbox ORDER BY seq").rows.map { try $0.decode(Int.self, at: 0) }
            XCTAssertEqual(attempts, [1, 0], "the first SET failed; the one behind it waits untried")
            let again = try await pusher.deliverOneStream()
            XCTAssertFalse(again, "nothing is due while the first SET backs off")

            // A disabled receiver client gets nothing: what waits for it is dropped, not sent.
            _ = try await harness.core.administration.clients.setEnabled(realm: "dev", id: "receiver", enabled: false, metadata: .init())
            _ = try await harness.core.pool.query("UPDATE ssf_outbox SET next_attempt_at = now()")
            _ = try await pusher.deliverOneStream()
            let left = try await harness.core.pool.query("SELECT count(*) FROM ssf_outbox").first?.decode(Int.self, at: 0)
            XCTAssertEqual(left, 0)
        }
    }

    static func claims(_ token: String) throws -> [String: Any] {
        var text = token.split(separator: ".")[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: XCTUnwrap(Data(base64Encoded: text))) as? [String: Any])
    }
}
