/// The flags byte of authenticator data (WebAuthn section 6.1).
public struct AuthenticatorFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bit 0: user present.
    public static let userPresent = AuthenticatorFlags(rawValue: 0x01)
    /// Bit 2: user verified.
    public static let userVerified = AuthenticatorFlags(rawValue: 0x04)
    /// Bit 3: backup eligible (a multi-device credential).
    public static let backupEligible = AuthenticatorFlags(rawValue: 0x08)
    /// Bit 4: backed up.
    public static let backedUp = AuthenticatorFlags(rawValue: 0x10)
    /// Bit 6: attested credential data included.
    public static let attestedCredentialData = AuthenticatorFlags(rawValue: 0x40)
    /// Bit 7: extension data included.
    public static let extensionData = AuthenticatorFlags(rawValue: 0x80)
}
