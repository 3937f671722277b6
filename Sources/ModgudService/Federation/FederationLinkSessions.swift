import Crypto
import Foundation
import WebAuthn

/// Link sessions (issue 48): when a provider's ID token names an address that already has an
/// account, and the provider's `Linking` asks for proof of the mailbox, the refusal
/// (`link_requires_email_code`) hands the app a `link_session`. The app then signs in with an
/// email code to that address and sends the session with the code; the code's redemption
/// links the provider account in its own transaction. The session is what the verified ID
/// token said (its nonce is spent by then), sealed so only this deployment reads it.
///
/// Stateless: AES-256-GCM under a key every instance derives from the master key (HKDF label
/// `modgud federation link v1`), bound to the realm and client as associated data, good for
/// `lifetime` seconds. It confers nothing alone: the email code proves the mailbox, and the
/// link table's keys make a second use (or a race) link nothing twice.
public struct FederationLinkSessions: Sendable {
    /// What a session says: who the provider account is and which account it may join.
    public struct Claims: Codable, Sendable, Equatable {
        public var provider: String
        public var subject: String
        public var userID: UUID
        public var expires: Int64

        enum CodingKeys: String, CodingKey {
            case provider = "p"
            case subject = "s"
            case userID = "u"
            case expires = "e"
        }
    }

    private let key: SymmetricKey
    /// Seconds a session is good for: long enough to fetch and type a code.
    public let lifetime: Int64 = 600

    public init(masterKey: [UInt8]) {
        key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: masterKey), info: Array("modgud federation link v1".utf8), outputByteCount: 32)
    }

    /// A session for `provider`'s `subject` to join `userID`, in `realm` through `clientID`.
    public func issue(provider: String, subject: String, userID: UUID, realm: String, clientID: String, now: Date) throws -> String {
        let claims = Claims(provider: provider, subject: subject, userID: userID, expires: Int64(now.timeIntervalSince1970) + lifetime)
        let box = try AES.GCM.seal(try JSONEncoder().encode(claims), using: key, authenticating: Self.context(realm: realm, clientID: clientID))
        guard let combined = box.combined else { throw CryptoKitError.incorrectParameterSize }
        return Base64URL.encode(Array(combined))
    }

    /// The session's claims, or nil when it is not this deployment's, not for this realm and
    /// client, or expired.
    public func open(_ session: String, realm: String, clientID: String, now: Date) -> Claims? {
        guard session.utf8.count <= 2048, let bytes = Base64URL.decode(session), let box = try? AES.GCM.SealedBox(combined: bytes),
            let plain = try? AES.GCM.open(box, using: key, authenticating: Self.context(realm: realm, clientID: clientID)),
            let claims = try? JSONDecoder().decode(Claims.self, from: plain), claims.expires > Int64(now.timeIntervalSince1970)
        else { return nil }
        return claims
    }

    private static func context(realm: String, clientID: String) -> [UInt8] {
        Array("\(realm)\u{0}\(clientID)".utf8)
    }
}
