import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// A native app written from the guide (`../shared/seeds/001_…`) and from Auth0's Native
/// Passkeys API (`../shared/seeds/002_…`), nothing else: the requests as the seeds print them,
/// over a real socket, against a realm with only the guide's two opt-ins (the realm's native
/// grants, and a public client holding the native grants with its RP-ID, "Part A").
///
/// Every step is named after the seed's heading; an assertion that fails names its step, so a
/// red walk says which documented flow an app team would find broken (issue 65).
struct SeedWalk: Sendable {
    typealias H = EmailSignInHarness
    let harness: EmailSignInHarness
    var authenticator = SoftwareAuthenticator()

    /// The guide's `<client_id>`, `<api-audience>` and the client's RP-ID ("Part A", step 3).
    static let clientID = "native-app"
    static let api = "https://api.acme.test"
    static let rpID = "app.acme.test"
    static let origin = "https://app.acme.test"
    /// Auth0's My Account audience on this host, and its passkey scopes (seed 002).
    static let myAccount = "http://localhost/me/"
    static let myAccountScopes = ["create", "read", "update", "delete"].map { "\($0):me:authentication_methods" }

    /// The realm as the guide's admin leaves it: native grants on (Part A, step 1); the public
    /// client with the native grants, refresh, `openid offline_access` and an API scope, its
    /// RP-ID and the API as an audience (steps 2 and 3). Nothing else is configured: the guards
    /// beyond the guide keep their defaults. `guards`: what a stricter operator turns on.
    static func makeHarness(guards: AccountGuards = AccountGuards()) async throws -> EmailSignInHarness {
        let harness = try await EmailSignInHarness(settings: { $0.guards = guards == AccountGuards() ? nil : guards }, issuerScheme: "http")
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: clientID,
            settings: ClientSettings(
                type: .public, grants: [.otp, .magic, .passkey, .refreshToken], allowedScopes: ["openid", "offline_access", "profile", "api"],
                audiences: [api], rpID: rpID),
            metadata: .init())
        return harness
    }

    // MARK: Requests, as the guide prints them

    static func form(_ fields: [(String, String)]) -> String {
        fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0.1)" }.joined(separator: "&")
    }

    static func bearer(_ token: String, json: Bool = false) -> HTTPFields {
        PasskeySteps.bearer(token, json: json)
    }

    /// Flow 1, step 2: the code redeemed, with the optional `resource`.
    func redeemCode(_ client: some TestClientProtocol, _ email: String, _ code: String, resource: String? = nil, totp: String? = nil) async throws -> H.Reply {
        var fields = [
            ("grant_type", "urn:cocoar:otp"), ("client_id", Self.clientID), ("username", email), ("otp_code", code), ("scope", "openid offline_access"),
        ]
        if let resource { fields.append(("resource", resource)) }
        if let totp { fields.append(("totp_code", totp)) }
        return try await H.call(client, .post, "/connect/token", Self.form(fields), headers: H.form)
    }

    /// Flow 1 in full: request a code (with names, "Required identity fields"), read the mail,
    /// redeem it. The token response.
    func signInWithCode(
        _ client: some TestClientProtocol, _ email: String, number: Int, names: (String, String)? = nil, resource: String? = nil, step: String
    ) async throws -> H.Reply {
        var body: [String: String] = ["Email": email]
        if let names { (body["FirstName"], body["LastName"]) = names }
        let requested = try await H.call(client, .post, "/api/account/native/otp/request", H.jsonBody(body), headers: H.json)
        XCTAssertEqual(requested.status, .ok, "\(step): request a code: \(requested.body)")
        XCTAssertEqual(
            requested.json["Message"] as? String, "If your email is registered, you will receive a verification code.", "\(step): the uniform answer")
        let code = try await harness.code(for: email, number: number)
        let redeemed = try await redeemCode(client, email, code, resource: resource)
        XCTAssertEqual(redeemed.status, .ok, "\(step): redeem the code: \(redeemed.body)")
        Self.assertTokenResponse(redeemed, step: step)
        return redeemed
    }

    /// "The token response is standard OAuth": Bearer, 900 seconds, a refresh token with
    /// `offline_access`, the granted scope.
    static func assertTokenResponse(_ reply: H.Reply, refresh: Bool = true, step: String) {
        XCTAssertEqual(reply.json["token_type"] as? String, "Bearer", "\(step): token_type")
        XCTAssertEqual(reply.json["expires_in"] as? Int, 900, "\(step): expires_in (the realm's default 15 minutes)")
        XCTAssertEqual(reply.json["refresh_token"] != nil, refresh, "\(step): refresh_token only with offline_access")
        XCTAssertNotNil(reply.json["scope"] as? String, "\(step): scope")
        XCTAssertNotNil(reply.json["access_token"] as? String, "\(step): access_token")
    }

    /// Flow 3, steps 1 to 3: begin with the client id, sign on the "device", redeem.
    func signInWithPasskey(_ client: some TestClientProtocol, _ credential: inout SoftwareCredential, resource: String? = nil, step: String) async throws
        -> H.Reply
    {
        let begun = try await H.call(client, .post, "/connect/passkey/begin", Self.form([("client_id", Self.clientID)]), headers: H.form)
        XCTAssertEqual(begun.status, .ok, "\(step): begin: \(begun.body)")
        let options = try XCTUnwrap(begun.json["options"] as? [String: Any], "\(step): options")
        XCTAssertEqual(options["rpId"] as? String, Self.rpID, "\(step): the client's RP-ID")
        XCTAssertEqual(options["userVerification"] as? String, "required", "\(step): user verification required")
        XCTAssertEqual((options["allowCredentials"] as? [Any])?.count ?? 0, 0, "\(step): usernameless, empty allowCredentials")
        let challenge = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(options["challenge"] as? String)))
        let assertion = authenticator.assert(&credential, .init(challenge: challenge, origin: Self.origin))
        var fields = [
            ("grant_type", "urn:cocoar:passkey"), ("client_id", Self.clientID), ("ceremony_id", try XCTUnwrap(begun.json["ceremonyId"] as? String)),
            ("assertion", String(decoding: assertion.json, as: UTF8.self)), ("scope", "openid offline_access"),
        ]
        if let resource { fields.append(("resource", resource)) }
        let redeemed = try await H.call(client, .post, "/connect/token", Self.form(fields), headers: H.form)
        XCTAssertEqual(redeemed.status, .ok, "\(step): redeem the assertion: \(redeemed.body)")
        return redeemed
    }

    /// "First-run bootstrap", steps 2 to 4, with the token the app holds. nil when refused
    /// (the reply is then returned for the caller to judge).
    func enroll(_ client: some TestClientProtocol, token: String, name: String) async throws -> (credential: SoftwareCredential?, id: String?, reply: H.Reply) {
        let begun = try await H.call(client, .post, "/connect/passkey/enroll/begin", "", headers: Self.bearer(token))
        guard begun.status == .ok else { return (nil, nil, begun) }
        let options = try XCTUnwrap(begun.json["options"] as? [String: Any])
        let user = try XCTUnwrap(options["user"] as? [String: Any])
        let credential = SoftwareCredential(
            algorithm: .es256, rpID: try XCTUnwrap((options["rp"] as? [String: Any])?["id"] as? String),
            userHandle: try XCTUnwrap(Base64URL.decode(try XCTUnwrap(user["id"] as? String))))
        let challenge = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(options["challenge"] as? String)))
        let attestation = authenticator.register(credential, .init(challenge: challenge, origin: Self.origin))
        let body = #"{"ceremonyId":"\#(try XCTUnwrap(begun.json["ceremonyId"] as? String))","attestation":\#(String(decoding: attestation.json, as: UTF8.self)),"DisplayName":"\#(name)"}"#
        let enrolled = try await H.call(client, .post, "/connect/passkey/enroll", body, headers: Self.bearer(token, json: true))
        guard enrolled.status == .ok else { return (nil, nil, enrolled) }
        return (credential, enrolled.json["Id"] as? String, enrolled)
    }

    /// "Tokens: storage, refresh, revocation": the guide's refresh, `resource` included.
    func refresh(_ client: some TestClientProtocol, _ refreshToken: String, resource: String? = Self.api) async throws -> H.Reply {
        var fields = [("grant_type", "refresh_token"), ("client_id", Self.clientID), ("refresh_token", refreshToken)]
        if let resource { fields.append(("resource", resource)) }
        return try await H.call(client, .post, "/connect/token", Self.form(fields), headers: H.form)
    }

    /// An RFC 9470 challenge: 401, `insufficient_user_authentication`, `max_age`.
    static func assertStepUpChallenge(_ reply: H.Reply, step: String) {
        XCTAssertEqual(reply.status, .unauthorized, "\(step): \(reply.body)")
        let challenge = reply.headers[values: .wwwAuthenticate].joined(separator: " ")
        XCTAssertTrue(challenge.contains(#"error="insufficient_user_authentication""#) && challenge.contains("max_age=600"), "\(step): \(challenge)")
    }
}
