import CBOR
import X509

/// What an attestation statement verifier is given (WebAuthn section 8, each format's
/// "verification procedure" inputs: attStmt, authenticatorData, clientDataHash).
public struct AttestationInput: Sendable {
    public let statement: CBOR
    public let authenticatorData: AuthenticatorData
    public let credential: AuthenticatorData.AttestedCredential
    public let clientDataHash: [UInt8]
    public let policy: VerificationPolicy

    public init(
        statement: CBOR, authenticatorData: AuthenticatorData, credential: AuthenticatorData.AttestedCredential, clientDataHash: [UInt8],
        policy: VerificationPolicy
    ) {
        self.statement = statement
        self.authenticatorData = authenticatorData
        self.credential = credential
        self.clientDataHash = clientDataHash
        self.policy = policy
    }

    /// authenticatorData || clientDataHash: what most formats sign.
    public var signedData: [UInt8] { authenticatorData.raw + clientDataHash }
}

/// The attestation type a statement conveys (WebAuthn section 6.5.4).
public enum AttestationType: String, Sendable, Hashable {
    case none
    case selfAttestation = "self"
    case basic
    case attestationCA = "attCA"
    case anonymizationCA = "anonCA"
}

/// A verified attestation: its type and trust path (section 7.1 step 23 output).
public struct AttestationResult: Sendable {
    public var type: AttestationType
    /// The certificates, leaf first (empty for none and self attestation).
    public var trustPath: [Certificate]
    /// Whether the path reached one of the policy's trust anchors.
    public var anchored: Bool

    public init(type: AttestationType, trustPath: [Certificate] = [], anchored: Bool = false) {
        self.type = type
        self.trustPath = trustPath
        self.anchored = anchored
    }
}

/// One attestation statement format (section 8): its `fmt` identifier and verification procedure.
public protocol AttestationFormat: Sendable {
    /// The `fmt` value (section 8.1 registry).
    var identifier: String { get }
    /// Verifies the statement; throws `attestationInvalid`, `attestationUntrusted` or
    /// `certificatePathRefused`.
    func verify(_ input: AttestationInput) async throws(WebAuthnError) -> AttestationResult
}

/// The formats a relying party accepts, keyed by `fmt` (section 7.1 step 22: case-sensitive match).
public struct AttestationFormatRegistry: Sendable {
    private var formats: [String: any AttestationFormat]

    public init(_ formats: [any AttestationFormat]) {
        self.formats = Dictionary(formats.map { ($0.identifier, $0) }, uniquingKeysWith: { _, last in last })
    }

    /// Every format of WebAuthn L3 section 8.
    public static let standard = AttestationFormatRegistry([
        NoneAttestation(), PackedAttestation(), FidoU2FAttestation(), AppleAttestation(), AndroidKeyAttestation(),
        TPMAttestation(), AndroidSafetyNetAttestation(),
    ])

    public func format(_ identifier: String) -> (any AttestationFormat)? {
        formats[identifier]
    }

    public var identifiers: [String] { formats.keys.sorted() }
}
