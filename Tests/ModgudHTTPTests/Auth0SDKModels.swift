import Foundation
import XCTest

/// The models Auth0's native SDKs decode our answers into, written from their public sources
/// (issue 41; our own code, none copied): each type names the SDK file and version it follows
/// and requires what that model requires, in its types and formats. A member the SDK declares
/// non-optional is required here. For Auth0.Android, Gson fills a missing non-null Kotlin
/// member with null and the app fails on first use, so those count as required too.
///
/// Versions read: Auth0.swift 3.1.0 (commit 850e1a2), Auth0.Android 3.18.0 (commit 4be6b4c).
enum Auth0SDK {
    // MARK: Formats the SDKs parse

    /// Auth0.swift `String+URLSafe.swift` `a0_decodeBase64URLSafe`: `-`→`+`, `_`→`/`, padded,
    /// then strict base64.
    static func base64URL(_ text: String) -> Data? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard)
    }

    /// Auth0.swift `PasskeyAuthenticationMethod.swift`: `ISO8601DateFormatter` with
    /// `.withInternetDateTime` and `.withFractionalSeconds` (a time without them fails).
    static func fractionalISO8601(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }

    static func corrupted(_ container: some KeyedDecodingContainerProtocol, _ message: String) -> DecodingError {
        DecodingError.dataCorrupted(.init(codingPath: container.codingPath, debugDescription: message))
    }

    /// Decodes `reply`'s body as `T`, failing the test with the decoder's reason.
    static func decode<T: Decodable>(_ type: T.Type, _ body: String, file: StaticString = #filePath, line: UInt = #line) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(body.utf8))
        } catch {
            XCTFail("\(T.self) does not decode: \(error)\n\(body)", file: file, line: line)
            throw error
        }
    }
}

// MARK: - Auth0.swift 3.1.0

/// `Auth0/PublicKeyCredentialCreationOptions.swift` (sign-up and My Account enrollment):
/// `rp.id`, `user.id` (base64url), `user.name`, `challenge` (base64url).
struct SwiftCreationOptions: Decodable {
    struct RP: Decodable { let id: String }
    struct User: Decodable {
        let id: String
        let name: String
    }
    let rp: RP
    let user: User
    let challenge: Data

    enum CodingKeys: String, CodingKey { case rp, user, challenge }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        rp = try container.decode(RP.self, forKey: .rp)
        user = try container.decode(User.self, forKey: .user)
        guard Auth0SDK.base64URL(user.id) != nil else { throw Auth0SDK.corrupted(container, "Format of user id is not recognized.") }
        guard let challenge = Auth0SDK.base64URL(try container.decode(String.self, forKey: .challenge)) else {
            throw Auth0SDK.corrupted(container, "Format of challenge is not recognized.")
        }
        self.challenge = challenge
    }
}

/// `Auth0/PasskeySignupChallenge.swift`: `auth_session` and the creation options.
struct SwiftPasskeySignupChallenge: Decodable {
    let auth_session: String
    let authn_params_public_key: SwiftCreationOptions
}

/// `Auth0/PasskeyLoginChallenge.swift` with `PublicKeyCredentialRequestOptions.swift`:
/// `auth_session`, `authn_params_public_key.rpId`, `.challenge` (base64url).
struct SwiftPasskeyLoginChallenge: Decodable {
    struct Options: Decodable {
        let rpId: String
        let challenge: String
    }
    let auth_session: String
    let authn_params_public_key: Options
}

/// `Auth0/MyAccount/AuthenticationMethods/PasskeyEnrollmentChallenge.swift`: the body as a
/// sign-up challenge, the method id the last `/`-separated part of `Location` (the decoder
/// throws "Missing authentication method identifier in header 'Location'" without it); the
/// SDK percent-decodes it before building `…/<id>/verify`.
struct SwiftPasskeyEnrollmentChallenge {
    let authenticationMethodID: String
    let challenge: SwiftPasskeySignupChallenge

    init(location: String?, body: String) throws {
        guard let location else { throw SDKRefusal(description: "Missing authentication method identifier in header 'Location'") }
        authenticationMethodID = location.components(separatedBy: "/").last ?? ""
        challenge = try Auth0SDK.decode(SwiftPasskeySignupChallenge.self, body)
    }
}

/// A refusal an SDK raises outside JSON decoding (a missing header), with its message.
struct SDKRefusal: Error, CustomStringConvertible {
    let description: String
}

/// `Auth0/PasskeyAuthenticationMethod.swift`, what the enrollment's verify step decodes: a flat
/// object whose credential members are required.
struct SwiftPasskeyAuthenticationMethod: Decodable {
    enum DeviceType: String, Decodable {
        case singleDevice = "single_device"
        case multiDevice = "multi_device"
    }
    let id: String
    let type: String
    let identityUserID: String
    let userAgent: String?
    let createdAt: Date
    let aaguid: String
    let relyingPartyID: String
    let keyID: String
    let publicKey: Data
    let userHandle: Data
    let deviceType: DeviceType
    let backedUp: Bool

    enum CodingKeys: String, CodingKey {
        case id, type, aaguid
        case identityUserID = "identity_user_id"
        case userAgent = "user_agent"
        case createdAt = "created_at"
        case relyingPartyID = "relying_party_id"
        case keyID = "key_id"
        case publicKey = "public_key"
        case userHandle = "user_handle"
        case deviceType = "credential_device_type"
        case backedUp = "credential_backed_up"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        type = try container.decode(String.self, forKey: .type)
        identityUserID = try container.decode(String.self, forKey: .identityUserID)
        userAgent = try container.decodeIfPresent(String.self, forKey: .userAgent)
        guard let created = Auth0SDK.fractionalISO8601(try container.decode(String.self, forKey: .createdAt)) else {
            throw Auth0SDK.corrupted(container, "Format of created_at is not recognized.")
        }
        createdAt = created
        aaguid = try container.decode(String.self, forKey: .aaguid)
        relyingPartyID = try container.decode(String.self, forKey: .relyingPartyID)
        keyID = try container.decode(String.self, forKey: .keyID)
        guard let key = Data(base64Encoded: try container.decode(String.self, forKey: .publicKey)) else {
            throw Auth0SDK.corrupted(container, "Format of public_key is not recognized.")
        }
        publicKey = key
        guard let handle = Auth0SDK.base64URL(try container.decode(String.self, forKey: .userHandle)) else {
            throw Auth0SDK.corrupted(container, "Format of user_handle is not recognized.")
        }
        userHandle = handle
        deviceType = try container.decode(DeviceType.self, forKey: .deviceType)
        backedUp = try container.decode(Bool.self, forKey: .backedUp)
    }
}

/// `Auth0/MyAccount/AuthenticationMethods/GetAuthenticationMethodsResponse.swift`: the list
/// wrapper and the generic method (get and rename answer it).
struct SwiftAuthenticationMethods: Decodable {
    let authentication_methods: [SwiftAuthenticationMethod]
}

struct SwiftAuthenticationMethod: Decodable {
    let id: String
    let created_at: String
    let usage: [String]
    let type: String?
    let credential_backed_up: Bool?
    let credential_device_type: String?
    let identity_user_id: String?
    let key_id: String?
    let public_key: String?
    let transports: [String]?
    let user_agent: String?
    let user_handle: String?
    let name: String?
}

/// `Auth0/Credentials.swift`: every member optional, of its type; `expires_in` a number or a
/// numeric string.
struct SwiftCredentials: Decodable {
    let access_token: String?
    let token_type: String?
    let id_token: String?
    let refresh_token: String?
    let scope: String?
    let expiresIn: Double?

    enum CodingKeys: String, CodingKey {
        case access_token, token_type, id_token, refresh_token, scope
        case expiresIn = "expires_in"
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        access_token = try container.decodeIfPresent(String.self, forKey: .access_token)
        token_type = try container.decodeIfPresent(String.self, forKey: .token_type)
        id_token = try container.decodeIfPresent(String.self, forKey: .id_token)
        refresh_token = try container.decodeIfPresent(String.self, forKey: .refresh_token)
        scope = try container.decodeIfPresent(String.self, forKey: .scope)
        if let text = try? container.decode(String.self, forKey: .expiresIn) {
            expiresIn = Double(text)
        } else {
            expiresIn = try container.decodeIfPresent(Double.self, forKey: .expiresIn)
        }
    }
}

/// `Auth0/UserProfile.swift`: `sub` required (else the SDK reports an error); `email_verified`
/// read as a Bool (a string reads as nil).
struct SwiftUserProfile: Decodable {
    let sub: String
    let email: String?
    let email_verified: Bool?
}

/// `Auth0/AuthenticationError.swift`: `code` is `error` else `code`; the message
/// `description` else `error_description`. The helpers an app checks compare exact texts.
struct SwiftAuthenticationError: Decodable {
    let error: String?
    let code: String?
    let description: String?
    let error_description: String?

    var codeValue: String { error ?? code ?? "a0.sdk.internal_error.unknown" }
    var message: String { description ?? error_description ?? "" }
    var isInvalidCredentials: Bool {
        codeValue == "invalid_user_password"
            || (codeValue == "invalid_grant"
                && ["Wrong email or password.", "Wrong email or verification code.", "Wrong phone number or verification code."].contains(message))
    }
    var isInvalidRefreshToken: Bool { codeValue == "invalid_grant" && message == "Unknown or invalid refresh token." }
}

/// `Auth0/MyAccount/MyAccountError.swift`: `type` (the code), `title`, `detail`, and
/// `validation_errors` when present.
struct SwiftMyAccountError: Decodable {
    let type: String
    let title: String
    let detail: String
    let status: Int
}

// MARK: - Auth0.Android 3.18.0

/// `result/PasskeyRegistrationChallenge.kt` (sign-up, and the body of My Account enrollment).
struct AndroidPasskeyRegistrationChallenge: Decodable {
    struct Options: Decodable {
        struct Selection: Decodable {
            let residentKey: String
            let userVerification: String
        }
        struct Parameter: Decodable {
            let alg: Int
            let type: String
        }
        struct RelyingParty: Decodable {
            let id: String
            let name: String
        }
        struct User: Decodable {
            let displayName: String
            let id: String
            let name: String
        }
        let authenticatorSelection: Selection
        let challenge: String
        let pubKeyCredParams: [Parameter]
        let rp: RelyingParty
        let timeout: Int64
        let user: User
    }
    let auth_session: String
    let authn_params_public_key: Options
}

/// `result/PasskeyChallenge.kt` (login).
struct AndroidPasskeyChallenge: Decodable {
    struct Options: Decodable {
        let challenge: String
        let rpId: String
        let timeout: Int32
        let userVerification: String
    }
    let auth_session: String
    let authn_params_public_key: Options
}

/// `myaccount/MyAccountAPIClient.kt` `passkeyEnrollmentChallenge`: the method id is the
/// `location` header's last `/`-separated part, URL-decoded ("Authentication method ID not
/// found in Location header." without it).
struct AndroidPasskeyEnrollmentChallenge {
    let authenticationMethodID: String
    let challenge: AndroidPasskeyRegistrationChallenge

    init(location: String?, body: String) throws {
        guard let location, let last = location.split(separator: "/", omittingEmptySubsequences: false).last else {
            throw SDKRefusal(description: "Authentication method ID not found in Location header.")
        }
        authenticationMethodID = String(last).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(last)
        challenge = try Auth0SDK.decode(AndroidPasskeyRegistrationChallenge.self, body)
    }
}

/// `result/AuthenticationMethod.kt` `PasskeyAuthenticationMethod` (the sealed class picks it
/// by `type` == `passkey`): `id`, `type`, `created_at` (kept as text), `usage`, `aaguid` and
/// `relying_party_id` non-null; the rest nullable, of their types.
struct AndroidPasskeyAuthenticationMethod: Decodable {
    let id: String
    let type: String
    let created_at: String
    let usage: [String]
    let aaguid: String
    let relying_party_id: String
    let credential_backed_up: Bool?
    let credential_device_type: String?
    let identity_user_id: String?
    let key_id: String?
    let public_key: String?
    let transports: [String]?
    let user_agent: String?
    let user_handle: String?
}

/// `result/AuthenticationMethods` (key `authentication_methods`), every item a passkey here.
struct AndroidAuthenticationMethods: Decodable {
    let authentication_methods: [AndroidPasskeyAuthenticationMethod]
}

/// `request/internal/CredentialsDeserializer.kt`: `id_token`, `access_token`, `token_type`
/// and `expires_in` (a long) reach non-null parameters; `refresh_token`, `scope` optional.
struct AndroidCredentials: Decodable {
    let id_token: String
    let access_token: String
    let token_type: String
    let expires_in: Int64
    let refresh_token: String?
    let scope: String?
}

/// `request/internal/UserProfileDeserializer.java`: nothing required, `email_verified` a
/// Boolean; the id is `user_id`, else `sub`.
struct AndroidUserProfile: Decodable {
    let user_id: String?
    let sub: String?
    let email: String?
    let email_verified: Bool?
    var id: String? { user_id ?? sub }
}

/// `authentication/AuthenticationException.kt`: `code` is `error` else `code`; the
/// description `description` else `error_description`; the same exact texts as Auth0.swift.
typealias AndroidAuthenticationException = SwiftAuthenticationError

/// `myaccount/MyAccountException.kt`: `type`, `title`, `detail` (the code is `title`).
struct AndroidMyAccountException: Decodable {
    let type: String?
    let title: String
    let detail: String?
}
