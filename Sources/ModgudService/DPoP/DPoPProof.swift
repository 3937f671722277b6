import Crypto
import Foundation
import WebAuthn

/// A DPoP proof JWT (RFC 9449 section 4), checked as section 4.3 lists. The stateful steps,
/// the server nonce (step 10) and jti single use (section 11.1), belong to `DPoPVerifier`.
public struct DPoPProof: Sendable {
    public let key: DPoPKey
    public let jti: String
    public let method: String
    public let url: String
    /// Seconds since 1970 (`iat`).
    public let issuedAt: Int64
    public let nonce: String?
    /// base64url SHA-256 of the access token (`ath`), at resource endpoints.
    public let accessTokenHash: String?

    /// The longest proof accepted (a header and claims with a P-256 key are about 600 bytes).
    static let maxLength = 4096

    /// Parses `jwt` and checks RFC 9449 section 4.3, steps 2–9 and 12: a well-formed JWS
    /// (2), its required members (3), `typ` (4), a supported asymmetric `alg` (5), the
    /// signature by the `jwk` (6), a public `jwk` (7), `htm` (8), `htu` (9), and `ath` when
    /// an access token is presented (12).
    public init(parsing jwt: String, method: String, url: String, accessToken: String? = nil) throws(DPoPError) {
        guard jwt.utf8.count <= Self.maxLength else { throw .invalid("the proof is too long") }
        // Step 2: three base64url parts, a JSON header and payload.
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = DPoPKey.strictBase64URL(String(parts[0])),
            let payloadBytes = DPoPKey.strictBase64URL(String(parts[1])), let signature = DPoPKey.strictBase64URL(String(parts[2])),
            let header = Self.object(headerBytes), let claims = Self.object(payloadBytes)
        else { throw .invalid("the proof is not a JWT") }
        // Steps 4 and 5: typ, and an asymmetric algorithm we support (never `none`, never HMAC).
        guard header["typ"] as? String == "dpop+jwt" else { throw .invalid("typ must be dpop+jwt") }
        guard let name = header["alg"] as? String, let algorithm = DPoPKey.Algorithm(rawValue: name) else {
            throw .invalid("alg must be one of \(DPoPKey.Algorithm.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        // Steps 3 and 7: the jwk is present and public.
        guard let jwk = header["jwk"] as? [String: Any] else { throw .invalid("the header has no jwk") }
        key = try DPoPKey(jwk: jwk, algorithm: algorithm)
        // Step 6: the signature over the first two parts, by that key.
        guard key.verifies(signature, over: Array("\(parts[0]).\(parts[1])".utf8)) else { throw .invalid("the signature does not verify") }
        // Step 3: the required claims.
        guard let jti = claims["jti"] as? String, !jti.isEmpty, jti.utf8.count <= 256, let htm = claims["htm"] as? String,
            let htu = claims["htu"] as? String, let iat = (claims["iat"] as? NSNumber)?.int64Value
        else { throw .invalid("the proof lacks jti, htm, htu or iat") }
        // Step 8: the method.
        guard htm == method else { throw .invalid("htm does not match the request method") }
        // Step 9: the URI without query and fragment, normalised (RFC 3986 section 6.2.2, 6.2.3).
        guard let claimed = DPoPTarget(htu), let actual = DPoPTarget(url), claimed == actual else {
            throw .invalid("htu does not match the request URI")
        }
        // Step 12: ath when an access token comes with the proof.
        let ath = claims["ath"] as? String
        if let accessToken {
            let expected = Base64URL.encode(Array(SHA256.hash(data: Array(accessToken.utf8))))
            guard let ath, ath == expected else { throw .invalid("ath does not match the access token") }
        }
        self.jti = jti
        self.method = htm
        self.url = htu
        self.issuedAt = iat
        self.nonce = claims["nonce"] as? String
        self.accessTokenHash = ath
    }

    private static func object(_ bytes: [UInt8]) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }
}

/// An HTTP URI reduced to what `htu` is compared by: scheme and host lower-cased, the
/// default port dropped, an empty path as `/`, no query and no fragment.
struct DPoPTarget: Equatable {
    var scheme: String
    var host: String
    var port: Int?
    var path: String

    init?(_ text: String) {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        self.scheme = scheme
        self.host = host
        let defaultPort = scheme == "https" ? 443 : 80
        port = components.port == defaultPort ? nil : components.port
        path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
    }
}

/// A refused proof, as the token endpoint (`invalid_dpop_proof`, `use_dpop_nonce`) and the
/// resource endpoints (`WWW-Authenticate: DPoP error=…`) report it (RFC 9449 sections 5, 7.1, 8).
public enum DPoPError: Error, Equatable, Sendable {
    case invalid(String)
    /// A nonce is needed (none, or a stale one): answer `use_dpop_nonce` with a fresh one.
    case useNonce(String)
    /// The jti was seen within the window.
    case replayed
}
