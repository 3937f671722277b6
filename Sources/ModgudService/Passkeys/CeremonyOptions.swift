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
        /// ES256, EdDSA, RS256 (in preference order; Auth0's endpoints list them in its order).
        var pubKeyCredParams: [Parameter]
        var timeout: Int
        var excludeCredentials: [Descriptor]
        var authenticatorSelection = Selection()
        var attestation = "none"
    }

    /// The verifier's algorithms in Modgud's preference order: ES256, EdDSA, RS256.
    public static let preferredAlgorithms = [-7, -8, -257]
    /// The same algorithms in the order Auth0's Native Passkeys API prints them (seed 002).
    public static let auth0Algorithms = [-8, -7, -257]

    public func encode(to encoder: any Encoder) throws {
        try encode(to: encoder, algorithms: Self.preferredAlgorithms)
    }

    /// Encodes with `pubKeyCredParams` in `algorithms`' order (creation options only).
    public func encode(to encoder: any Encoder, algorithms: [Int]) throws {
        switch self {
        case .request(let challenge, let rpID, let timeout):
            try Request(challenge: Base64URL.encode(challenge), rpId: rpID, timeout: Int(timeout * 1000)).encode(to: encoder)
        case .creation(let challenge, let rpID, let rpName, let handle, let name, let displayName, let exclude, let timeout):
            try Creation(
                rp: .init(id: rpID, name: rpName), user: .init(id: handle, name: name, displayName: displayName),
                challenge: Base64URL.encode(challenge), pubKeyCredParams: algorithms.map { Parameter(alg: $0) }, timeout: Int(timeout * 1000),
                excludeCredentials: exclude.map { Descriptor(id: $0) }
            ).encode(to: encoder)
        }
    }
}

/// Ceremony options as Auth0's endpoints show them: `pubKeyCredParams` in Auth0's order.
public struct Auth0CeremonyOptions: Encodable, Sendable {
    public let options: CeremonyOptions

    public init(_ options: CeremonyOptions) {
        self.options = options
    }

    public func encode(to encoder: any Encoder) throws {
        try options.encode(to: encoder, algorithms: CeremonyOptions.auth0Algorithms)
    }
}
