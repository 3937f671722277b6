import Foundation

/// Every error the server documents, typed (docs/api.md and docs/guides/passkeys-in-an-app.md),
/// and the client's own. Errors the server may add later arrive as `.oauth` or `.problem` with
/// their names, never as a bare status.
public enum ModgudError: Error, Sendable, Equatable {
    // MARK: Grants (`invalid_grant` with docs/spec.md's messages)
    /// A wrong, expired, burned or used email code.
    case invalidCode
    /// A wrong, expired or used magic link.
    case invalidLink
    /// The account has TOTP: ask for the authenticator code and sign in again with it.
    case twoFactorRequired
    case invalidTwoFactorCode
    /// Disabled or deleted.
    case accountCannotSignIn
    /// The passkey sign-in or sign-up was refused, whatever was wrong (the ceremony, the
    /// signature, the credential or the account: seed 001's one text): begin again, or sign in
    /// another way.
    case passkeyRefused
    /// Servers before issue 41 told these two apart.
    case passkeyCeremonyExpired
    case passkeyVerificationFailed
    /// Passkey sign-up for an address that has an account: run the login flow instead.
    case accountExists
    /// The refresh token was refused (expired, revoked, reused, account ended): the stored
    /// session is gone; sign in again.
    case sessionEnded

    // MARK: Account and passkey endpoints (RFC 7807 problems)
    /// Enrollment needs a sign-in within the realm's freshness window: sign in again.
    case reauthenticationRequired
    case signUpNotAllowed
    case signUpDisabled
    case passkeyNotFound
    case invalidPasskeyName
    case passkeyAlreadyRegistered
    case passkeyEnrollmentExpired
    case invalidAttestation
    case invalidEmail
    /// A name the realm requires is missing; the server's message (`Firstname is required.`).
    case fieldRequired(String)
    case nativeGrantsDisabled
    case magicLinksDisabled
    /// The realm has no RP-ID for passkeys.
    case passkeysUnavailable
    /// An automatic upgrade needs a sign-in by code or link within 5 minutes (issue 46).
    case upgradeNotAllowed
    /// The device offered a passkey the server does not know (deleted, or never enrolled):
    /// tell the device (`signalUnknownCredential`) with these, and sign in another way.
    case unknownPasskey(credentialID: String, rpID: String)

    // MARK: Everywhere
    case rateLimited(retryAfterSeconds: Int?)
    /// The server or its database is unavailable for now: retry after the interval.
    case temporarilyUnavailable(retryAfterSeconds: Int?)
    /// Any other OAuth error (RFC 6749 section 5.2): `invalid_request`, `invalid_client`,
    /// `invalid_scope`, `invalid_target`, `unauthorized_client`, `unsupported_grant_type`, …
    case oauth(code: String, description: String?, status: Int)
    /// A provider sign-in met an account with the same address (issue 48): sign in with an
    /// email code to that address and pass `linkSession` to `signIn(email:code:linkSession:)`,
    /// which links the provider account.
    case linkRequiresEmailCode(linkSession: String)
    /// Any other problem (RFC 7807) by its title, `Request.MalformedJSON` say.
    case problem(title: String, detail: String?, status: Int)

    // MARK: The client's own
    case notSignedIn
    /// The server's answer was not what the API documents.
    case invalidResponse(status: Int, body: String)
    case discovery(String)
    case transport(String)
    case storage(String)
    /// The passkey authenticator refused or was cancelled.
    case authenticator(String)

    /// The error an HTTP answer documents.
    /// The OAuth `error` of an answer's JSON body, if any.
    static func oauthErrorCode(_ body: Data) -> String? {
        ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["error"] as? String
    }

    static func from(status: Int, headers: [AnyHashable: Any], body: Data) -> ModgudError {
        let retryAfter = (headers["Retry-After"] as? String ?? headers["retry-after"] as? String).flatMap(Int.init)
        let json = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
        if status == 429 { return .rateLimited(retryAfterSeconds: retryAfter ?? (json["retryAfterSeconds"] as? Int)) }
        if let code = json["error"] as? String {
            let description = json["error_description"] as? String
            if code == "temporarily_unavailable" { return .temporarilyUnavailable(retryAfterSeconds: retryAfter) }
            if code == "invalid_grant", let credential = json["credential_id"] as? String, let rpID = json["rp_id"] as? String {
                return .unknownPasskey(credentialID: credential, rpID: rpID)
            }
            if code == "invalid_grant", let session = json["link_session"] as? String { return .linkRequiresEmailCode(linkSession: session) }
            if code == "invalid_grant", let description, let known = grantErrors[description] { return known }
            if json["error_description"] == nil, status == 400, !code.contains("_") { return .fieldRequired(code) }
            return .oauth(code: code, description: description, status: status)
        }
        if let title = json["title"] as? String {
            if title == "Service.Unavailable" { return .temporarilyUnavailable(retryAfterSeconds: retryAfter) }
            if title == "Passkey.FieldRequired" { return .fieldRequired(json["detail"] as? String ?? "") }
            if let known = problems[title] { return known }
            return .problem(title: title, detail: json["detail"] as? String, status: status)
        }
        if status == 503 { return .temporarilyUnavailable(retryAfterSeconds: retryAfter) }
        return .invalidResponse(status: status, body: String(decoding: body.prefix(500), as: UTF8.self))
    }

    static let grantErrors: [String: ModgudError] = [
        "Invalid or expired code.": .invalidCode,
        "Invalid or expired link.": .invalidLink,
        "Two-factor authentication is required; supply totp_code.": .twoFactorRequired,
        // Servers before issue 25; since then one message answers a missing and a wrong code.
        "The two-factor code is invalid.": .invalidTwoFactorCode,
        "The account cannot sign in.": .accountCannotSignIn,
        "Invalid or expired passkey assertion.": .passkeyRefused,
        "Invalid or expired passkey ceremony.": .passkeyCeremonyExpired,
        "Passkey verification failed.": .passkeyVerificationFailed,
        "An account with this email address exists. Sign in instead.": .accountExists,
    ]

    static let problems: [String: ModgudError] = [
        "Passkey.ReauthenticationRequired": .reauthenticationRequired,
        "Passkey.SignUpNotAllowed": .signUpNotAllowed,
        "Passkey.SignUpDisabled": .signUpDisabled,
        "Passkey.NotFound": .passkeyNotFound,
        "Passkey.InvalidName": .invalidPasskeyName,
        "Passkey.AlreadyRegistered": .passkeyAlreadyRegistered,
        "Passkey.SessionExpired": .passkeyEnrollmentExpired,
        "Passkey.InvalidAttestation": .invalidAttestation,
        "Passkey.InvalidEmail": .invalidEmail,
        "Passkey.Unavailable": .passkeysUnavailable,
        "Passkey.UpgradeNotAllowed": .upgradeNotAllowed,
        "Email.Invalid": .invalidEmail,
        "Email.InvalidCode": .invalidCode,
        "NativeGrants.Disabled": .nativeGrantsDisabled,
        "MagicLink.Disabled": .magicLinksDisabled,
    ]
}
