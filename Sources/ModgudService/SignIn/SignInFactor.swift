import Foundation
import ModgudDomain

/// How a proof signed a person in (issue 68): the grant it answers and the methods it stands
/// for (RFC 8176), and whether the account's second factor is still asked after it. A factor
/// only proves who the user is; `SignInPipeline` does everything after.
public struct SignInFactor: Sendable, Equatable {
    /// Every factor, by the wire name of the grant that carries it: the registry the pipeline
    /// and `ArchitectureFitnessTests` read (each user grant has one).
    public enum Kind: String, Sendable, CaseIterable {
        case emailCode = "urn:cocoar:otp"
        case magicLink = "urn:cocoar:magic"
        case passkey = "urn:cocoar:passkey"
        case recoveryCode = "urn:modgud:recovery-code"
        /// RFC 8693: a provider's ID token (Sign in with Apple, Google), or a Native SSO
        /// device secret joining a device session.
        case tokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
        /// RFC 8628: a device whose person approved it with a passkey on a phone.
        case deviceApproval = "urn:ietf:params:oauth:grant-type:device_code"

        /// The grant type a token family records.
        public var grantType: GrantType {
            GrantType(rawValue: rawValue)!
        }

        /// The registry: the factor kind of a user grant, by its wire name.
        public static func registered(_ grant: GrantType) -> Kind? {
            Kind(rawValue: grant.rawValue)
        }
    }

    public let kind: Kind
    /// The methods of the proof alone.
    let amr: [String]
    /// The methods with an accepted TOTP code; nil when the proof asks no second factor (it
    /// stands for two alone, or the sign-in it continues had its own).
    let amrWithSecondFactor: [String]?
    /// The provider whose revocation ends the family (RFC 8693 exchanges of an ID token).
    var federation: String?
    /// When the person signed in, for a sign-in without a new proof (a device approval, a
    /// device session joined); nil is now.
    var authTime: Date?
    /// The device session a Native SSO exchange signs into.
    var joining: DeviceSessionLink?

    /// Whether the account's TOTP is asked after this proof.
    var asksSecondFactor: Bool { amrWithSecondFactor != nil }

    /// The methods as signed in: with TOTP when a step was accepted.
    func methods(secondFactor: Bool) -> [String] {
        secondFactor ? (amrWithSecondFactor ?? amr) : amr
    }

    /// An email one-time code (docs/spec.md section 2): `otp`, `mfa` with TOTP.
    public static let emailCode = SignInFactor(
        kind: .emailCode, amr: AuthenticationContext.emailAMR(totp: false), amrWithSecondFactor: AuthenticationContext.emailAMR(totp: true))

    /// A magic link (docs/spec.md section 3): as a code.
    public static let magicLink = SignInFactor(
        kind: .magicLink, amr: AuthenticationContext.emailAMR(totp: false), amrWithSecondFactor: AuthenticationContext.emailAMR(totp: true))

    /// A user-verified passkey assertion: two factors in one (`AuthenticationContext.passkeyAMR`).
    public static func passkey(backupEligible: Bool) -> SignInFactor {
        SignInFactor(kind: .passkey, amr: AuthenticationContext.passkeyAMR(backupEligible: backupEligible), amrWithSecondFactor: nil)
    }

    /// A recovery code (issue 46): a session that may only enroll a passkey.
    public static let recoveryCode = SignInFactor(kind: .recoveryCode, amr: AuthenticationContext.recoveryAMR, amrWithSecondFactor: nil)

    /// RFC 8176 `fed`: the person authenticated at a federated provider (Microsoft's value; no
    /// registered one says it), with TOTP `otp` and `mfa` when the second factor was given.
    public static func federated(provider: String) -> SignInFactor {
        SignInFactor(kind: .tokenExchange, amr: ["fed"], amrWithSecondFactor: ["fed", "otp", "mfa"], federation: provider)
    }

    /// A device approved with a passkey (RFC 8628): the approval's time and methods.
    public static func deviceApproval(amr: [String], at authTime: Date) -> SignInFactor {
        SignInFactor(kind: .deviceApproval, amr: amr, amrWithSecondFactor: nil, authTime: authTime)
    }

    /// Native SSO (draft 07 section 4): a teammate app joins the device session, with the
    /// session's time and methods.
    public static func deviceSession(_ link: DeviceSessionLink, amr: [String], at authTime: Date) -> SignInFactor {
        SignInFactor(kind: .tokenExchange, amr: amr, amrWithSecondFactor: nil, authTime: authTime, joining: link)
    }
}
