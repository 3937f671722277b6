import Foundation

/// How a sign-in happened, as tokens state it (issue 46): `amr` with RFC 8176 values and
/// `acr` from a documented, ordered set (docs/api.md, "Tokens"). Pure.
///
/// | Sign-in | `amr` | `acr` |
/// |---|---|---|
/// | email code, magic link | `otp` | single-factor |
/// | either, with TOTP | `otp`, `mfa` | mfa |
/// | passkey (user verification is always required) | `hwk` (device-bound) or `swk` (synced), `mfa` | mfa |
/// | recovery code | `otp` | recovery |
public enum AuthenticationContext {
    /// A session that may only enroll a passkey and manage sessions (a recovery code).
    public static let recovery = "urn:modgud:acr:recovery"
    /// One factor: an email code or link.
    public static let singleFactor = "urn:modgud:acr:single-factor"
    /// Two: a passkey with user verification, or a code or link with TOTP.
    public static let mfa = "urn:modgud:acr:mfa"
    /// Weakest first: what `acr_values_supported` lists, and the order `acr_values` compares by.
    public static let supported = [recovery, singleFactor, mfa]

    /// The `acr` of a sign-in by its `amr` (a recovery session names its own).
    public static func acr(amr: [String]) -> String {
        amr.contains("mfa") ? mfa : singleFactor
    }

    /// RFC 8176 for an email code or a magic link: a one-time secret (`otp`); with TOTP a
    /// second one-time password makes it `mfa`.
    public static func emailAMR(totp: Bool) -> [String] {
        totp ? ["otp", "mfa"] : ["otp"]
    }

    /// RFC 8176 for a passkey assertion with user verification: proof of possession of a key,
    /// hardware-bound (`hwk`) unless the credential may be synced (WebAuthn's backup-eligible
    /// flag: `swk`), and two factors in one (`mfa`: possession, and the PIN or biometric).
    public static func passkeyAMR(backupEligible: Bool) -> [String] {
        [backupEligible ? "swk" : "hwk", "mfa"]
    }

    /// RFC 8176 for a recovery code: a one-time password.
    public static let recoveryAMR = ["otp"]

    /// Whether a sign-in with `acr` meets `acr_values` (OpenID Connect Core section 3.1.2.1,
    /// RFC 9470 section 4): at least as strong as the weakest value Modgud knows. Values it
    /// does not know are voluntary and ignored; none known asks nothing.
    public static func satisfies(_ acr: String, acrValues: [String]) -> Bool {
        let wanted = acrValues.compactMap { supported.firstIndex(of: $0) }
        guard let weakest = wanted.min() else { return true }
        return (supported.firstIndex(of: acr) ?? 0) >= weakest
    }

    /// The values of an `acr_values` parameter (space-separated).
    public static func values(_ parameter: String?) -> [String] {
        parameter?.split(separator: " ").map(String.init) ?? []
    }
}
