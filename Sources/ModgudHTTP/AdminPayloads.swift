import Crypto
import Foundation
import ModgudDomain
import ModgudService

/// Admin API bodies: PascalCase like the rest of Modgud's own JSON (docs/spec.md section 0).
enum AdminPayloads {
    struct Client: Codable {
        var Id: String?
        var `Type`: String?
        var DisplayName: String?
        var Grants: [String]?
        var Scopes: [String]?
        var Audiences: [String]?
        var RpId: String?
        var AndroidOrigins: [String]?
        var AccessTokenFormat: String?
        var PasskeySignUp: Bool?
        var AppleAppIds: [String]?
        var AndroidApps: [AndroidAppBody]?
        /// DPoP at the token endpoint: off, allowed (the default) or required (RFC 9449).
        var Dpop: String?
        /// Every DPoP proof must carry a server nonce (RFC 9449 section 8).
        var DpopNonce: Bool?
        /// The audience of a token asked for without one ("" clears: the client itself).
        var DefaultAudience: String?
        /// Audiences a refresh may switch to, with their scopes (Auth0's multi-resource refresh).
        var RefreshTokenPolicies: [RefreshPolicyBody]?
        /// Attestation-based client authentication (issue 47): off (the default), allowed or required.
        var ClientAttestation: String?
        /// App Attest environments accepted: production (the default) or production+development.
        var AppAttestEnvironments: String?
        /// The iOS app's custom URL scheme `/magic-login` opens it with (issue 65, item 6); "" clears.
        var AppUrlScheme: String?
        /// Read only: the Android apps whose Play Integrity keys are set, set and removed at
        /// `…/clients/{client}/play-integrity/{package}`.
        var PlayIntegrity: [PlayIntegrityView]?

        static let members: Set<String> = [
            "Id", "Type", "DisplayName", "Grants", "Scopes", "Audiences", "RpId", "AndroidOrigins", "AccessTokenFormat", "PasskeySignUp",
            "AppleAppIds", "AndroidApps", "Dpop", "DpopNonce", "DefaultAudience", "RefreshTokenPolicies",
            "ClientAttestation", "AppAttestEnvironments", "AppUrlScheme",
        ]

        func apply(to settings: inout ClientSettings) throws(AdminProblem) {
            if let DisplayName { settings.displayName = DisplayName }
            if let Grants {
                var grants = Set<GrantType>()
                for name in Grants {
                    guard let grant = GrantType(rawValue: name) else { throw AdminProblem("Client.UnknownGrant", "Unknown grant \(name).") }
                    grants.insert(grant)
                }
                settings.grants = grants
            }
            if let Scopes { settings.allowedScopes = Set(Scopes) }
            if let Audiences { settings.audiences = Set(Audiences) }
            if let RpId { settings.rpID = RpId.isEmpty ? nil : RpId }
            if let AndroidOrigins { settings.androidOrigins = Set(AndroidOrigins) }
            if let PasskeySignUp { settings.passkeySignUp = PasskeySignUp }
            if let AppleAppIds { settings.appleAppIDs = Set(AppleAppIds) }
            if let AndroidApps {
                settings.androidApps = AndroidApps.map { AndroidApp(packageName: $0.PackageName, sha256Fingerprints: $0.Sha256CertFingerprints) }
            }
            if let AccessTokenFormat {
                guard let format = ModgudDomain.AccessTokenFormat(rawValue: AccessTokenFormat) else {
                    throw AdminProblem("Client.InvalidAccessTokenFormat", "AccessTokenFormat is reference or jwt.")
                }
                settings.accessTokenFormat = format
            }
            if let Dpop {
                guard let policy = DPoPPolicy(rawValue: Dpop) else { throw AdminProblem("Client.InvalidDpop", "Dpop is off, allowed or required.") }
                settings.dpop = policy
            }
            if let DpopNonce { settings.dpopNonce = DpopNonce }
            if let DefaultAudience { settings.defaultAudience = DefaultAudience.isEmpty ? nil : DefaultAudience }
            if let RefreshTokenPolicies { settings.refreshTokenPolicies = RefreshTokenPolicies.map { RefreshTokenPolicy(audience: $0.Audience, scopes: $0.Scopes) } }
            if let ClientAttestation {
                guard let mode = ClientAttestationMode(rawValue: ClientAttestation) else {
                    throw AdminProblem("Client.InvalidClientAttestation", "ClientAttestation is off, allowed or required.")
                }
                settings.clientAttestation = mode
            }
            if let AppAttestEnvironments {
                guard let environments = ModgudDomain.AppAttestEnvironments(rawValue: AppAttestEnvironments) else {
                    throw AdminProblem("Client.InvalidAppAttestEnvironments", "AppAttestEnvironments is production or production+development.")
                }
                settings.appAttestEnvironments = environments
            }
            if let AppUrlScheme { settings.appURLScheme = AppUrlScheme.isEmpty ? nil : AppUrlScheme }
        }
    }

    /// A refresh policy: `{ "Audience", "Scopes": […] }`.
    struct RefreshPolicyBody: Codable {
        var Audience: String
        var Scopes: [String]
    }

    /// An Android app of a client: `{ "PackageName", "Sha256CertFingerprints": ["AB:CD:…"] }`;
    /// other members are refused like top-level ones.
    struct AndroidAppBody: Codable {
        var PackageName: String
        var Sha256CertFingerprints: [String]

        init(PackageName: String, Sha256CertFingerprints: [String]) {
            self.PackageName = PackageName
            self.Sha256CertFingerprints = Sha256CertFingerprints
        }

        private struct Member: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Member.self)
            if let unknown = container.allKeys.first(where: { !["PackageName", "Sha256CertFingerprints"].contains($0.stringValue) }) {
                throw DecodingError.typeMismatch(
                    AndroidAppBody.self, .init(codingPath: container.codingPath + [unknown], debugDescription: "unknown member"))
            }
            PackageName = try container.decode(String.self, forKey: Member(stringValue: "PackageName"))
            Sha256CertFingerprints = try container.decode([String].self, forKey: Member(stringValue: "Sha256CertFingerprints"))
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Member.self)
            try container.encode(PackageName, forKey: Member(stringValue: "PackageName"))
            try container.encode(Sha256CertFingerprints, forKey: Member(stringValue: "Sha256CertFingerprints"))
        }
    }

    static func clientView(_ state: ModgudDomain.Client.State) -> Client {
        let settings = state.settings
        return Client(
            Id: state.id, Type: settings?.type.rawValue, DisplayName: settings?.displayName, Grants: settings?.grants.sorted().map(\.rawValue),
            Scopes: settings?.allowedScopes.sorted(), Audiences: settings?.audiences.sorted(), RpId: settings?.rpID,
            AndroidOrigins: settings?.androidOrigins.sorted(), AccessTokenFormat: settings?.accessTokenFormat.rawValue,
            PasskeySignUp: settings?.passkeySignUp, AppleAppIds: settings?.appleAppIDs.sorted(),
            AndroidApps: settings?.androidApps.map { AndroidAppBody(PackageName: $0.packageName, Sha256CertFingerprints: $0.sha256Fingerprints) },
            Dpop: settings?.dpop.rawValue, DpopNonce: settings?.dpopNonce, DefaultAudience: settings?.defaultAudience,
            RefreshTokenPolicies: settings?.refreshTokenPolicies.map { RefreshPolicyBody(Audience: $0.audience, Scopes: $0.scopes) },
            ClientAttestation: settings?.clientAttestation.rawValue, AppAttestEnvironments: settings?.appAttestEnvironments.rawValue,
            AppUrlScheme: settings?.appURLScheme,
            PlayIntegrity: state.playIntegrity.sorted { $0.key < $1.key }.map { PlayIntegrityView(packageName: $0.key, $0.value) })
    }

    /// `PUT …/clients/{client}/play-integrity/{package}`: the Play Console's two keys, as it
    /// shows them (base64).
    struct PlayIntegrityKeysBody: Decodable {
        var DecryptionKey: String
        var VerificationKey: String
        static let members: Set<String> = ["DecryptionKey", "VerificationKey"]
    }

    /// An app's Play Integrity keys as the admin API shows them: never the decryption key.
    struct PlayIntegrityView: Codable {
        var PackageName: String
        /// Base64 of the DER public key, as set.
        var VerificationKey: String
        /// SHA-256 of the verification key's DER, hex: to compare with the Play Console.
        var VerificationKeySha256: String

        init(packageName: String, _ keys: PlayIntegrityKeys) {
            PackageName = packageName
            VerificationKey = keys.verificationKey
            VerificationKeySha256 = SHA256.hash(data: Data(base64Encoded: keys.verificationKey) ?? Data()).map { String(format: "%02x", $0) }.joined()
        }
    }

    /// The answer to `DELETE /admin/api/realms/{r}/users/{u}?erase=true`.
    struct Erasure: Encodable {
        var Id: String?
        var Status = "erased"
        /// False when the user had been erased already (the call only finished what remained).
        var ErasedNow: Bool
        var FamiliesRevoked: Int
        var PasskeysDeleted: Int
        var KeysShredded: Int
        var MailDeleted: Int

        init(_ outcome: UserEraser.Outcome) {
            Id = outcome.userID?.uuidString.lowercased()
            ErasedNow = outcome.erasedNow
            FamiliesRevoked = outcome.familiesRevoked
            PasskeysDeleted = outcome.passkeysDeleted
            KeysShredded = outcome.keysShredded
            MailDeleted = outcome.mailDeleted
        }
    }
}

/// A refusal of the admin API: a problem with a named title.
struct AdminProblem: Error {
    var title: String
    var detail: String
    var status: Int

    init(_ title: String, _ detail: String, status: Int = 400) {
        self.title = title
        self.detail = detail
        self.status = status
    }
}
