import EventSourcing
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// The passkey steps as an app runs them, against one harness.
struct PasskeySteps: Sendable {
    typealias H = EmailSignInHarness
    let harness: EmailSignInHarness
    var authenticator = SoftwareAuthenticator()


    /// OTP sign-in: the bootstrap before the first passkey.
    func signInWithCode(_ client: some TestClientProtocol, _ email: String, clientID: String, number: Int = 1) async throws -> String {
        _ = try await H.requestCode(client, email)
        let code = try await harness.code(for: email, number: number)
        let reply = try await H.redeemCode(client, email, code, clientID: clientID, scope: "openid offline_access")
        XCTAssertEqual(reply.status, .ok, reply.body)
        return try XCTUnwrap(reply.json["access_token"] as? String)
    }

    static func bearer(_ token: String, json: Bool = false) -> HTTPFields {
        json ? [.authorization: "Bearer \(token)", .contentType: "application/json"] : [.authorization: "Bearer \(token)"]
    }

    /// enroll/begin → create the credential on the "device" → enroll.
    func enroll(_ client: some TestClientProtocol, token: String, origin: String, name: String = "Ada's phone", algorithm: COSEAlgorithm = .es256)
        async throws -> (credential: SoftwareCredential, id: String)
    {
        let begun = try await H.call(client, .post, "/connect/passkey/enroll/begin", "", headers: Self.bearer(token))
        XCTAssertEqual(begun.status, .ok, begun.body)
        let options = try XCTUnwrap(begun.json["options"] as? [String: Any])
        let rp = try XCTUnwrap(options["rp"] as? [String: Any])
        let user = try XCTUnwrap(options["user"] as? [String: Any])
        let credential = SoftwareCredential(
            algorithm: algorithm, rpID: try XCTUnwrap(rp["id"] as? String),
            userHandle: try XCTUnwrap(Base64URL.decode(try XCTUnwrap(user["id"] as? String))))
        let challenge = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(options["challenge"] as? String)))
        let attestation = authenticator.register(credential, .init(challenge: challenge, origin: origin))
        let body = #"{"ceremonyId":"\#(try XCTUnwrap(begun.json["ceremonyId"] as? String))","attestation":\#(String(decoding: attestation.json, as: UTF8.self)),"DisplayName":"\#(name)"}"#
        let enrolled = try await H.call(client, .post, "/connect/passkey/enroll", body, headers: Self.bearer(token, json: true))
        XCTAssertEqual(enrolled.status, .ok, enrolled.body)
        return (credential, try XCTUnwrap(enrolled.json["Id"] as? String))
    }

    /// passkey/begin: the ceremony id and challenge.
    func begin(_ client: some TestClientProtocol, clientID: String?) async throws -> (id: String, challenge: [UInt8], options: [String: Any]) {
        let reply = try await H.call(
            client, .post, "/connect/passkey/begin", clientID.map { "client_id=\($0)" } ?? "", headers: H.form)
        XCTAssertEqual(reply.status, .ok, reply.body)
        let options = try XCTUnwrap(reply.json["options"] as? [String: Any])
        return (
            try XCTUnwrap(reply.json["ceremonyId"] as? String), try XCTUnwrap(Base64URL.decode(try XCTUnwrap(options["challenge"] as? String))),
            options
        )
    }

    func redeem(_ client: some TestClientProtocol, clientID: String, ceremony: String, assertion: String, scope: String = "openid offline_access")
        async throws -> H.Reply
    {
        try await H.token(
            client, [("grant_type", "urn:cocoar:passkey"), ("client_id", clientID), ("ceremony_id", ceremony), ("assertion", assertion), ("scope", scope)])
    }

    func json(_ assertion: AssertionCredential) -> String { String(decoding: assertion.json, as: UTF8.self) }

    func passkeyState(_ id: String) async throws -> Passkey.State {
        try await harness.core.passkeyActors.actor(for: StreamNames.passkey(realm: "dev", passkeyID: try XCTUnwrap(UUID(uuidString: id)))).current().state
    }

}
