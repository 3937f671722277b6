import Crypto
import ModgudDomain

/// Proof Key for Code Exchange (RFC 7636), S256 only: the Authorization Challenge Endpoint
/// takes no `plain` challenge (draft-ietf-oauth-first-party-apps, section on PKCE; RFC 9700
/// section 2.1.1: S256 where the client can).
public enum PKCE {
    /// Section 4.2: a challenge is base64url(SHA-256(verifier)): 43 characters.
    public static func isChallenge(_ text: String) -> Bool {
        text.utf8.count == 43 && Base64URLText.decode(text)?.count == 32
    }

    /// Section 4.1: 43 to 128 unreserved characters.
    public static func isVerifier(_ text: String) -> Bool {
        (43...128).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || "-._~".utf8.contains(byte)
            }
    }

    /// Section 4.6: the verifier's S256 transform equals the challenge (compared in constant time).
    public static func verifies(_ verifier: String, challenge: String) -> Bool {
        guard isVerifier(verifier) else { return false }
        return ConstantTime.equal(Base64URLText.encode(Array(SHA256.hash(data: Array(verifier.utf8)))), challenge)
    }
}
