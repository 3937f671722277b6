import Foundation

#if canImport(CryptoKit)
import CryptoKit
#else
import Crypto
#endif

/// A key that signs DPoP proofs (RFC 9449): the app's proof that it holds the key its
/// tokens are bound to. `SoftwareDPoPKey` keeps a P-256 key in memory or a file;
/// `SecureEnclaveDPoPKey` (Apple platforms) keeps it where it cannot be copied off the device.
public protocol DPoPSigner: Sendable {
    /// The JWS algorithm (`ES256`).
    var algorithm: String { get }
    /// The public key as a JWK (RFC 7517): the members the proof's `jwk` header carries.
    var publicJWK: [String: String] { get }
    /// The JWS signature of `message` (for ES256 the 64-byte `r || s`, RFC 7518 section 3.4).
    func signature(for message: Data) throws -> Data
}

extension DPoPSigner {
    /// A proof for one request (RFC 9449 section 4.2), for an app that sends a request to its
    /// own API itself: `DPoP: <proof>` with `Authorization: DPoP <access token>`.
    /// - Parameters:
    ///   - accessToken: the token the request carries (sets `ath`); nil at a token endpoint.
    ///   - nonce: the server's latest `DPoP-Nonce`, if it sent one.
    public func proof(method: String, url: URL, accessToken: String? = nil, nonce: String? = nil, now: Date = Date()) throws -> String {
        try DPoPProofBuilder.proof(signer: self, method: method, url: url, nonce: nonce, accessToken: accessToken, now: now)
    }

    /// The key's RFC 7638 thumbprint: what a bound token's `cnf.jkt` names.
    public var thumbprint: String {
        let jwk = publicJWK
        let required = jwk["kty"] == "OKP" ? ["crv", "kty", "x"] : jwk["kty"] == "RSA" ? ["e", "kty", "n"] : ["crv", "kty", "x", "y"]
        // Section 3: the required members in lexicographic order, no whitespace; these values need no escaping.
        let canonical = "{" + required.map { #""\#($0)":"\#(jwk[$0] ?? "")""# }.joined(separator: ",") + "}"
        return Base64URL.encode(Data(SHA256.hash(data: Data(canonical.utf8))))
    }
}

/// Builds one proof JWT (RFC 9449 section 4.2) for a request.
enum DPoPProofBuilder {
    /// - Parameters:
    ///   - url: the request's URL; `htu` is it without query and fragment (section 4.2).
    ///   - accessToken: sets `ath`, base64url SHA-256 of the token (section 4.2, resource requests).
    static func proof(
        signer: any DPoPSigner, method: String, url: URL, nonce: String?, accessToken: String?, now: Date
    ) throws -> String {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        components?.query = nil
        components?.fragment = nil
        let header: [String: Any] = ["typ": "dpop+jwt", "alg": signer.algorithm, "jwk": signer.publicJWK]
        var claims: [String: Any] = [
            "jti": UUID().uuidString, "htm": method, "htu": components?.string ?? url.absoluteString, "iat": Int(now.timeIntervalSince1970),
        ]
        if let nonce { claims["nonce"] = nonce }
        if let accessToken { claims["ath"] = Base64URL.encode(Data(SHA256.hash(data: Data(accessToken.utf8)))) }
        let signingInput = try part(header) + "." + part(claims)
        return signingInput + "." + Base64URL.encode(try signer.signature(for: Data(signingInput.utf8)))
    }

    /// A P-256 public key's JWK (RFC 7518 section 6.2.1) from its raw `x || y` (32 bytes each).
    static func jwk(p256 point: Data) -> [String: String] {
        ["kty": "EC", "crv": "P-256", "x": Base64URL.encode(point.prefix(32)), "y": Base64URL.encode(point.suffix(32))]
    }

    static func part(_ object: [String: Any]) throws -> String {
        Base64URL.encode(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
    }
}
