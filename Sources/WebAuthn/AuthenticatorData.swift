import CBOR

/// Authenticator data (WebAuthn section 6.1), parsed strictly: every byte must be accounted for.
public struct AuthenticatorData: Sendable {
    /// Attested credential data (section 6.5.1), present when AT is set.
    public struct AttestedCredential: Sendable {
        public var aaguid: [UInt8]
        public var credentialID: [UInt8]
        public var publicKey: COSEKey
    }

    /// SHA-256 of the RP ID the authenticator scoped the credential to.
    public let rpIDHash: [UInt8]
    public let flags: AuthenticatorFlags
    public let signCount: UInt32
    public let attestedCredential: AttestedCredential?
    /// The extension outputs map, present when ED is set.
    public let extensions: CBOR?
    /// The bytes as received (signatures cover them).
    public let raw: [UInt8]

    /// The longest credential id WebAuthn allows (section 7.1 step 26).
    public static let maxCredentialIDLength = 1023

    /// Parses authenticator data.
    /// - Throws: `WebAuthnError.malformedAuthenticatorData` naming what is wrong.
    public init(_ bytes: [UInt8]) throws(WebAuthnError) {
        raw = bytes
        guard bytes.count >= 37 else { throw .malformedAuthenticatorData(.tooShort) }
        rpIDHash = Array(bytes[0..<32])
        flags = AuthenticatorFlags(rawValue: bytes[32])
        signCount = UInt32(bytes[33]) << 24 | UInt32(bytes[34]) << 16 | UInt32(bytes[35]) << 8 | UInt32(bytes[36])
        var offset = 37
        if flags.contains(.attestedCredentialData) {
            // aaguid (16) | credentialIdLength (2, big-endian) | credentialId | credentialPublicKey (CBOR)
            guard bytes.count >= offset + 18 else { throw .malformedAuthenticatorData(.attestedCredentialTruncated) }
            let aaguid = Array(bytes[offset..<(offset + 16)])
            let length = Int(bytes[offset + 16]) << 8 | Int(bytes[offset + 17])
            offset += 18
            guard length <= Self.maxCredentialIDLength else { throw .credentialIDTooLong(length) }
            guard bytes.count >= offset + length else { throw .malformedAuthenticatorData(.attestedCredentialTruncated) }
            let credentialID = Array(bytes[offset..<(offset + length)])
            offset += length
            let keyItem: CBOR
            let consumed: Int
            do {
                (keyItem, consumed) = try CBORDecoder().decodePrefix(Array(bytes[offset...]))
            } catch {
                throw .malformedAuthenticatorData(.publicKey("\(error)"))
            }
            let publicKey = try COSEKey(keyItem, encoded: Array(bytes[offset..<(offset + consumed)]))
            offset += consumed
            attestedCredential = AttestedCredential(aaguid: aaguid, credentialID: credentialID, publicKey: publicKey)
        } else {
            attestedCredential = nil
        }
        if flags.contains(.extensionData) {
            guard offset < bytes.count else { throw .malformedAuthenticatorData(.extensionsMissing) }
            let item: CBOR
            let consumed: Int
            do {
                (item, consumed) = try CBORDecoder().decodePrefix(Array(bytes[offset...]))
            } catch {
                throw .malformedAuthenticatorData(.extensions("\(error)"))
            }
            guard item.mapValue != nil else { throw .malformedAuthenticatorData(.extensions("not a map")) }
            extensions = item
            offset += consumed
        } else {
            extensions = nil
        }
        guard offset == bytes.count else { throw .malformedAuthenticatorData(.trailingBytes(bytes.count - offset)) }
    }
}
