// Shared by the JWT harnesses (client attestation, federated ID token, Apple notification):
// fixed ES256 keys, a JWS made from framed JSON, and a JWKS that publishes the issuer key.

import Crypto
import Foundation
import WebAuthn

/// The issuer's key (the scalar 1, 2, …, 32; Fuzz/seeds.py knows its public half).
let issuerKey = try! P256.Signing.PrivateKey(rawRepresentation: Array(1...32) as [UInt8])
/// An app instance's key (the scalar 2, 3, …, 33).
let instanceKey = try! P256.Signing.PrivateKey(rawRepresentation: Array(2...33) as [UInt8])

/// The public JWK members of `key`.
func jwk(_ key: P256.Signing.PublicKey) -> [String: String] {
    let point = Array(key.x963Representation)
    return ["kty": "EC", "crv": "P-256", "x": Base64URL.encode(Array(point[1..<33])), "y": Base64URL.encode(Array(point[33..<65]))]
}

/// Reads a two-byte length and that many bytes; nil when the input is shorter.
func field(_ rest: inout ArraySlice<UInt8>) -> [UInt8]? {
    guard rest.count >= 2 else { return nil }
    let length = Int(rest[rest.startIndex]) << 8 | Int(rest[rest.startIndex + 1])
    rest = rest.dropFirst(2)
    guard rest.count >= length else { return nil }
    defer { rest = rest.dropFirst(length) }
    return Array(rest.prefix(length))
}

/// A compact ES256 JWS of `header` and `payload` (JSON bytes, as given) by `key`.
func jws(header: [UInt8], payload: [UInt8], key: P256.Signing.PrivateKey) -> String? {
    let input = Base64URL.encode(header) + "." + Base64URL.encode(payload)
    guard let signature = try? key.signature(for: Array(input.utf8)) else { return nil }
    return input + "." + Base64URL.encode(Array(signature.rawRepresentation))
}

/// The provider's JWKS: the issuer key, kid `fuzz`.
struct FixedJWKS: JWKSFetcher {
    func fetch(_ url: String) async throws -> [UInt8] {
        var key = jwk(issuerKey.publicKey)
        key["kid"] = "fuzz"
        key["alg"] = "ES256"
        key["use"] = "sig"
        return Array(try JSONSerialization.data(withJSONObject: ["keys": [key]]))
    }
}
