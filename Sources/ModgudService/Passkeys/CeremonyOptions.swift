import Foundation
import WebAuthn

/// The options an app hands its platform authenticator, in the WebAuthn L3 JSON forms
/// (PublicKeyCredentialRequestOptionsJSON section 5.5, PublicKeyCredentialCreationOptionsJSON
/// section 5.4), byte values base64url.
public enum CeremonyOptions: Sendable, Encodable, Equatable {
    case request(challenge: [UInt8], rpID: String, timeout: TimeInterval)
    case creation(
        challenge: [UInt8], rpID: String, rpName: String, userHandle: String, userName: String, userDisplayName: String, exclude: [String],
        timeout: TimeInterval)

    struct Descriptor: Encodable, Equatable {
        var type = "public-key"
        var id: String
    }

    struct Parameter: Encodable, Equatable {
        var type = "public-key"
        var alg: Int
    }

    struct Request: Encodable {
        var challenge: String
        var rpId: String
        var timeout: Int
        var userVerification = "required"
        /// Usernameless: the authenticator offers any discoverable credential for the RP-ID.
        var allowCredentials: [Descriptor] = []
    }

    struct Creation: Encodable {
        struct RP: Encodable { var id: String; var name: String }
        struct User: Encodable { var id: String; var name: String; var displayName: String }
        struct Selection: Encodable {
            var residentKey = "required"
            var requireResidentKey = true
            var userVerification = "required"
        }
        var rp: RP
        var user: User
        var challenge: String
        /// ES256, EdDSA, RS256 (in preference order).
        var pubKeyCredParams = [Parameter(alg: -7), Parameter(alg: -8), Parameter(alg: -257)]
        var timeout: Int
        var excludeCredentials: [Descriptor]
        var authenticatorSelection = Selection()
        var attestation = "none"
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .request(let challenge, let rpID, let timeout):
            try Request(challenge: Base64URL.encode(challenge), rpId: rpID, timeout: Int(timeout * 1000)).encode(to: encoder)
        case .creation(let challenge, let rpID, let rpName, let handle, let name, let displayName, let exclude, let timeout):
            try Creation(
                rp: .init(id: rpID, name: rpName), user: .init(id: handle, name: name, displayName: displayName),
                challenge: Base64URL.encode(challenge), timeout: Int(timeout * 1000), excludeCredentials: exclude.map { Descriptor(id: $0) }
            ).encode(to: encoder)
        }
    }
}
