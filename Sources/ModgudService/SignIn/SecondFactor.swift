import Foundation
import ModgudDomain

/// The TOTP gate of the OTP and magic grants (docs/spec.md section 2): RFC 6238, 6 digits, 30 s,
/// ±1 step, and a step at or below the last accepted one is refused (accepted once).
struct SecondFactor: Sendable {
    enum Result: Equatable {
        case notRequired
        case missing
        case wrong
        case valid(step: UInt64)
    }

    /// Seed 001's answer when TOTP is on and `totp_code` is missing or invalid: one message for
    /// both (issue 25), so the answer does not say which.
    static let refusal = OAuthError.invalidGrant("Two-factor authentication is required; supply totp_code.")

    let secrets: ServerSecrets
    let now: @Sendable () -> Date

    func check(_ code: String?, user: User.State, realm: String) throws -> Result {
        guard let sealed = user.encryptedTOTPSecret, let userID = user.id else { return .notRequired }
        guard let code, !code.isEmpty else { return .missing }
        let secret = try secrets.openTOTPSecret(sealed, realm: realm, userID: userID)
        guard let step = TOTP(secret: secret).match(code, at: now()) else { return .wrong }
        if let last = user.lastTOTPStep, step <= last { return .wrong }
        return .valid(step: step)
    }
}

extension EmailSignInService {
    /// The refusal of a code or link whose person has TOTP on and sent no valid `totp_code`
    /// (the Authorization Challenge Endpoint asks for the second factor on it, issue 45).
    public static let secondFactorRefusal = SecondFactor.refusal
}
