import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import WebAuthn
import WebAuthnTesting
import XCTest

/// One app instance on a test device (issue 47): its instance key, the App Attest key and
/// Android KeyStore evidence the test authorities make for it, and the PoPs it signs.
struct AttestedApp {
    typealias H = EmailSignInHarness
    static let appleAppID = "ABCDE12345.test.modgud.app"
    static let package = "test.modgud.app"
    static let signingDigest = Array(SHA256.hash(data: Array("the app's signing certificate".utf8)))

    let forge: PlatformAttestationForge
    let instanceKey = P256.Signing.PrivateKey()
    let appAttestKey = PlatformAttestationForge.AppAttestKey()

    var jwk: [String: String] {
        let point = instanceKey.publicKey.x963Representation
        return ["kty": "EC", "crv": "P-256", "x": Base64URL.encode(point[1..<33]), "y": Base64URL.encode(point[33..<65])]
    }

    /// RFC 7638.
    var thumbprint: String {
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(jwk["x"]!)","y":"\#(jwk["y"]!)"}"#
        return Base64URL.encode(Array(SHA256.hash(data: Array(canonical.utf8))))
    }

    func clientDataHash(_ challenge: String) -> [UInt8] {
        Array(SHA256.hash(data: Array("\(challenge).\(thumbprint)".utf8)))
    }

    static func challenge(_ client: some TestClientProtocol) async throws -> String {
        let reply = try await H.call(client, .post, "/connect/attestation/challenge", "", headers: [:])
        XCTAssertEqual(reply.status, .ok, reply.body)
        return try XCTUnwrap(reply.json["attestation_challenge"] as? String)
    }

    static func post(_ client: some TestClientProtocol, _ path: String, _ body: [String: Any]) async throws -> H.Reply {
        let data = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        return try await H.call(client, .post, path, String(decoding: data, as: UTF8.self), headers: [.contentType: "application/json"])
    }

    /// A Client Attestation JWT by App Attest (`attestKey`), or the refusal.
    func attestWithApple(_ client: some TestClientProtocol, clientID: String, options: PlatformAttestationForge.AppAttestOptions = .init(),
        appID: String = appleAppID) async throws -> H.Reply
    {
        let challenge = try await Self.challenge(client)
        let object = try forge.appAttestation(key: appAttestKey, appID: appID, clientDataHash: clientDataHash(challenge), options: options)
        return try await Self.post(
            client, "/connect/attestation/apple",
            ["client_id": clientID, "key_id": Data(appAttestKey.keyID).base64EncodedString(), "attestation_object": Base64URL.encode(object),
             "challenge": challenge, "jwk": jwk])
    }

    /// A Client Attestation JWT by an App Attest assertion (`generateAssertion`).
    func assertWithApple(_ client: some TestClientProtocol, clientID: String, counter: UInt32, challenge given: String? = nil) async throws -> H.Reply {
        var challenge = given ?? ""
        if given == nil { challenge = try await Self.challenge(client) }
        let assertion = try forge.appAssertion(key: appAttestKey, appID: Self.appleAppID, clientDataHash: clientDataHash(challenge), counter: counter)
        return try await Self.post(
            client, "/connect/attestation/apple/assertion",
            ["client_id": clientID, "key_id": Base64URL.encode(appAttestKey.keyID), "assertion": Base64URL.encode(assertion), "challenge": challenge,
             "jwk": jwk])
    }

    /// A Client Attestation JWT by Android key attestation.
    func attestWithAndroid(_ client: some TestClientProtocol, clientID: String, options: PlatformAttestationForge.AndroidKeyOptions = .init())
        async throws -> H.Reply
    {
        let challenge = try await Self.challenge(client)
        let chain = try forge.androidChain(
            key: P256.Signing.PrivateKey().publicKey, challenge: clientDataHash(challenge), packageName: Self.package, signatureDigest: Self.signingDigest,
            options: options)
        return try await Self.post(
            client, "/connect/attestation/android",
            ["client_id": clientID, "certificate_chain": chain.map { Data($0).base64EncodedString() }, "challenge": challenge, "jwk": jwk])
    }

    /// A Client Attestation JWT by a Play Integrity verdict of a classic request whose nonce is
    /// the client data hash, made by `play` (the app owner's keys) at `at`; `alter` changes
    /// the verdict first.
    func attestWithPlayIntegrity(
        _ client: some TestClientProtocol, clientID: String, play: PlayIntegrityForge, at: Date, packageName: String? = nil,
        alter: (inout [String: Any]) -> Void = { _ in }
    ) async throws -> H.Reply {
        let challenge = try await Self.challenge(client)
        var verdict = PlayIntegrityForge.verdict(
            packageName: Self.package, nonce: Base64URL.encode(clientDataHash(challenge)), certificateDigest: Self.signingDigest, at: at)
        alter(&verdict)
        var body: [String: Any] = ["client_id": clientID, "integrity_token": try play.token(verdict), "challenge": challenge, "jwk": jwk]
        if let packageName { body["package_name"] = packageName }
        return try await Self.post(client, "/connect/attestation/play-integrity", body)
    }

    /// A Client Attestation PoP JWT (section 5.2), signed by the instance key.
    func pop(audience: String, iat: Date, jti: String = UUID().uuidString, challenge: String? = nil) throws -> String {
        let header = #"{"alg":"ES256","typ":"oauth-client-attestation-pop+jwt"}"#
        var claims: [String: Any] = ["aud": audience, "jti": jti, "iat": Int(iat.timeIntervalSince1970)]
        if let challenge { claims["challenge"] = challenge }
        let payload = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload))
        let signature = try instanceKey.signature(for: Array(input.utf8)).rawRepresentation
        return input + "." + Base64URL.encode(Array(signature))
    }

    /// The two headers, added to `headers`.
    func headers(_ attestation: String, pop: String, _ headers: HTTPFields) -> HTTPFields {
        var headers = headers
        headers[HTTPField.Name("OAuth-Client-Attestation")!] = attestation
        headers[HTTPField.Name("OAuth-Client-Attestation-PoP")!] = pop
        return headers
    }
}
