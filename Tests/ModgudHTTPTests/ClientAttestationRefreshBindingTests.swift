import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import WebAuthnTesting
import XCTest

/// draft-ietf-oauth-attestation-based-client-auth-10 section 9.3 (issue 66): a refresh token
/// issued to an attested app instance is bound to that instance's key. Another attested
/// instance of the same app cannot refresh it, nor can a request without attestation where
/// attestation is only `allowed`; its own instance can. A session signed in without attestation
/// (a guide-shaped app at an `allowed` client) stays bound to nothing.
final class ClientAttestationRefreshBindingTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    /// An attestation of `app` for `clientID`, and a function making the two headers with a fresh PoP.
    static func attest(_ app: AttestedApp, _ client: some TestClientProtocol, clientID: String, issuer: String, harness: EmailSignInHarness) async throws
        -> @Sendable (HTTPFields) throws -> HTTPFields
    {
        let attested = try await app.attestWithApple(client, clientID: clientID)
        XCTAssertEqual(attested.status, .ok, attested.body)
        let attestation = try XCTUnwrap(attested.json["client_attestation"] as? String)
        return { base in app.headers(attestation, pop: try app.pop(audience: issuer, iat: harness.clock.now()), base) }
    }

    /// Signs `address` in at `clientID` with an email code; the refresh token.
    static func signIn(
        _ client: some TestClientProtocol, clientID: String, address: String, harness: EmailSignInHarness, headers: (HTTPFields) throws -> HTTPFields
    ) async throws -> String {
        let requested = try await H.call(
            client, .post, "/api/account/native/otp/request", #"{"Email":"\#(address)","ClientId":"\#(clientID)"}"#, headers: try headers(H.json))
        XCTAssertEqual(requested.status, .ok, requested.body)
        let code = try await harness.code(for: address)
        let form = "grant_type=urn:cocoar:otp&client_id=\(clientID)&username=\(address)&otp_code=\(code)&scope=openid%20offline_access"
        let signedIn = try await H.call(client, .post, "/connect/token", form, headers: try headers(H.form))
        XCTAssertEqual(signedIn.status, .ok, signedIn.body)
        return try XCTUnwrap(signedIn.json["refresh_token"] as? String)
    }

    func testARefreshTokenIsBoundToTheAttestedInstanceThatSignedIn() async throws {
        let forge = try PlatformAttestationForge()
        harness = try await ClientAttestationTests.start(forge)
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            let issuer = try await ClientAttestationTests.issuer(client)
            for clientID in ["genuine", "soft"] {
                // Two installs of the app (an App Attest key is attested once).
                let (own, other) = (AttestedApp(forge: forge), AttestedApp(forge: forge))
                let ownHeaders = try await Self.attest(own, client, clientID: clientID, issuer: issuer, harness: harness)
                let otherHeaders = try await Self.attest(other, client, clientID: clientID, issuer: issuer, harness: harness)
                var token = try await Self.signIn(client, clientID: clientID, address: "bound-\(clientID)@example.com", harness: harness, headers: ownHeaders)
                let refresh = { (token: String) in "grant_type=refresh_token&client_id=\(clientID)&refresh_token=\(token)" }
                // Another attested instance of the same app: refused, and nothing is spent.
                let stolen = try await H.call(client, .post, "/connect/token", refresh(token), headers: try otherHeaders(H.form))
                XCTAssertEqual(stolen.json["error"] as? String, "invalid_client_attestation", stolen.body)
                XCTAssertTrue((stolen.json["error_description"] as? String ?? "").contains("another app instance"), stolen.body)
                if clientID == "soft" {
                    // Where attestation is only allowed, a refresh without one is refused too.
                    let bare = try await H.call(client, .post, "/connect/token", refresh(token), headers: H.form)
                    XCTAssertEqual(bare.json["error"] as? String, "invalid_client_attestation", bare.body)
                }
                // Its own instance refreshes, twice (the first refusals spent nothing).
                for _ in 0..<2 {
                    let refreshed = try await H.call(client, .post, "/connect/token", refresh(token), headers: try ownHeaders(H.form))
                    XCTAssertEqual(refreshed.status, .ok, refreshed.body)
                    token = try XCTUnwrap(refreshed.json["refresh_token"] as? String)
                }
            }
            // Signed in without attestation at the allowed client: bound to nothing.
            var token = try await Self.signIn(client, clientID: "soft", address: "plain@example.com", harness: harness, headers: { $0 })
            let plain = try await H.call(client, .post, "/connect/token", "grant_type=refresh_token&client_id=soft&refresh_token=\(token)", headers: H.form)
            XCTAssertEqual(plain.status, .ok, plain.body)
            token = try XCTUnwrap(plain.json["refresh_token"] as? String)
            XCTAssertFalse(token.isEmpty)
        }
    }
}
