import Foundation
import WebAuthn

/// The Client Attestation PoP JWT (draft-ietf-oauth-attestation-based-client-auth-10 section
/// 5.1): typed `oauth-client-attestation-pop+jwt`, signed by the key in the attestation's
/// `cnf.jwk`, with `aud` (the authorization server's issuer), `jti`, `iat` and, when the server
/// handed one out, `challenge`. Checked here as far as it can be without state; the jti's
/// single use and the challenge's freshness are `ClientAttestationVerifier`'s.
public struct ClientAttestationPoP: Sendable {
    public static let type = "oauth-client-attestation-pop+jwt"
    static let maxLength = 4096

    public let jti: String
    public let issuedAt: Int64
    public let challenge: String?

    /// Section 5.2 and "Validating the HTTP Header Fields" (section 6.1): a JWS of the right
    /// type, an asymmetric algorithm the key supports, the signature by `key`, `aud` naming
    /// `issuer`, and `jti` and `iat` present. An `iss` (drafts before -05 had it) must be the
    /// client id.
    init(parsing jwt: String, key: DPoPKey, issuer: String, clientID: String) throws(ClientAttestationError) {
        guard jwt.utf8.count <= Self.maxLength else { throw .invalid("the PoP is too long") }
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = DPoPKey.strictBase64URL(String(parts[0])),
            let payloadBytes = DPoPKey.strictBase64URL(String(parts[1])), let signature = DPoPKey.strictBase64URL(String(parts[2])),
            let header = Self.object(headerBytes), let claims = Self.object(payloadBytes)
        else { throw .invalid("the PoP is not a JWT") }
        guard header["typ"] as? String == Self.type else { throw .invalid("the PoP's typ must be \(Self.type)") }
        guard header["alg"] as? String == key.algorithm.rawValue else {
            throw .invalid("the PoP's alg must be \(key.algorithm.rawValue), the attested key's")
        }
        guard key.verifies(signature, over: Array("\(parts[0]).\(parts[1])".utf8)) else {
            throw .invalid("the PoP is not signed by the attested instance key")
        }
        let audiences = (claims["aud"] as? String).map { [$0] } ?? (claims["aud"] as? [String]) ?? []
        guard audiences.contains(issuer) else { throw .invalid("the PoP's aud must be the issuer \(issuer)") }
        if let iss = claims["iss"], iss as? String != clientID { throw .invalid("the PoP's iss is not the client id") }
        guard let jti = claims["jti"] as? String, !jti.isEmpty, jti.utf8.count <= 256, let iat = (claims["iat"] as? NSNumber)?.int64Value else {
            throw .invalid("the PoP lacks jti or iat")
        }
        self.jti = jti
        self.issuedAt = iat
        self.challenge = claims["challenge"] as? String
    }

    private static func object(_ bytes: [UInt8]) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }
}
