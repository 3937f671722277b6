/// COSE algorithm identifiers WebAuthn credentials use (IANA COSE Algorithms registry).
public enum COSEAlgorithm: Int64, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// ECDSA with P-256 and SHA-256.
    case es256 = -7
    /// EdDSA (Ed25519).
    case edDSA = -8
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    case rs256 = -257
    /// RSASSA-PSS with SHA-256.
    case ps256 = -37
    /// ECDSA with P-384 and SHA-384 (attestation signatures only).
    case es384 = -35
    /// RSASSA-PKCS1-v1_5 with SHA-1 (TPM attestation signatures only).
    case rs1 = -65535

    public var description: String {
        switch self {
        case .es256: return "ES256"
        case .edDSA: return "EdDSA"
        case .rs256: return "RS256"
        case .ps256: return "PS256"
        case .es384: return "ES384"
        case .rs1: return "RS1"
        }
    }

    /// The algorithms a credential key may use by default: ES256, EdDSA, RS256.
    public static let credentialDefaults: [COSEAlgorithm] = [.es256, .edDSA, .rs256]
}
