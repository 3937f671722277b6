import SwiftASN1

/// Android's key attestation extension (OID 1.3.6.1.4.1.11129.2.1.17), the parts a relying
/// party or an attester checks: the schema of "Verify hardware-backed key pairs with key
/// attestation" (Android developer documentation), `KeyDescription`.
///
/// ```
/// KeyDescription ::= SEQUENCE {
///   attestationVersion INTEGER, attestationSecurityLevel SecurityLevel,
///   keyMintVersion INTEGER, keyMintSecurityLevel SecurityLevel,
///   attestationChallenge OCTET STRING, uniqueId OCTET STRING,
///   softwareEnforced AuthorizationList, hardwareEnforced AuthorizationList }
/// ```
public struct AndroidKeyDescription: Sendable, Equatable {
    /// Where a key and its attestation live (`SecurityLevel ::= ENUMERATED`).
    public enum SecurityLevel: Int64, Sendable, Comparable {
        case software = 0
        case trustedEnvironment = 1
        case strongBox = 2

        public static func < (lhs: SecurityLevel, rhs: SecurityLevel) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// `VerifiedBootState ::= ENUMERATED { Verified, SelfSigned, Unverified, Failed }`.
    public enum VerifiedBootState: Int64, Sendable {
        case verified = 0
        case selfSigned = 1
        case unverified = 2
        case failed = 3
    }

    /// `RootOfTrust ::= SEQUENCE { verifiedBootKey, deviceLocked BOOLEAN, verifiedBootState, verifiedBootHash }`.
    public struct RootOfTrust: Sendable, Equatable {
        public var deviceLocked: Bool
        public var verifiedBootState: VerifiedBootState
    }

    /// `AttestationApplicationId ::= SEQUENCE { package_infos SET OF AttestationPackageInfo,
    /// signature_digests SET OF OCTET STRING }`, with `AttestationPackageInfo ::= SEQUENCE {
    /// package_name OCTET STRING, version INTEGER }`.
    public struct ApplicationID: Sendable, Equatable {
        public var packageNames: [String]
        /// SHA-256 digests of the app's signing certificates.
        public var signatureDigests: [[UInt8]]
    }

    public var attestationVersion: Int64
    public var attestationSecurityLevel: SecurityLevel
    public var keyMintSecurityLevel: SecurityLevel
    public var attestationChallenge: [UInt8]
    public var allApplications = false
    /// `origin [702]`, from either list.
    public var origins: Set<Int64> = []
    /// `purpose [1]`, from either list.
    public var purposes: Set<Int64> = []
    /// `rootOfTrust [704]`: in the hardware-enforced list only (a software claim proves nothing).
    public var rootOfTrust: RootOfTrust?
    /// `attestationApplicationId [709]`: Android puts it in the software-enforced list (the OS
    /// fills it in), so it is read from either.
    public var applicationID: ApplicationID?

    /// Parses the extension's value; nil when it is not a KeyDescription.
    public init?(der: [UInt8]) {
        guard let root = try? DER.parse(der), case .constructed(let fields) = root.content else { return nil }
        let elements = Array(fields)
        guard elements.count >= 8, let version = Self.integer(elements[0]),
            let attestationLevel = Self.integer(elements[1]).flatMap(SecurityLevel.init(rawValue:)),
            let keyMintLevel = Self.integer(elements[3]).flatMap(SecurityLevel.init(rawValue:)),
            case .primitive(let challenge) = elements[4].content
        else { return nil }
        attestationVersion = version
        attestationSecurityLevel = attestationLevel
        keyMintSecurityLevel = keyMintLevel
        attestationChallenge = Array(challenge)
        for (index, list) in elements[6...7].enumerated() {
            guard case .constructed(let entries) = list.content else { return nil }
            for entry in entries where entry.identifier.tagClass == .contextSpecific {
                guard case .constructed(let wrapped) = entry.content, let inner = wrapped.first(where: { _ in true }) else { continue }
                guard read(entry.identifier.tagNumber, inner, hardwareEnforced: index == 1) else { return nil }
            }
        }
    }

    /// Reads one tagged entry of an AuthorizationList; false when it is malformed.
    private mutating func read(_ tag: UInt, _ inner: ASN1Node, hardwareEnforced: Bool) -> Bool {
        switch tag {
        case 1:  // purpose [1] EXPLICIT SET OF INTEGER
            guard case .constructed(let values) = inner.content else { return false }
            for value in values { if let number = Self.integer(value) { purposes.insert(number) } }
        case 702:  // origin [702] EXPLICIT INTEGER
            if let number = Self.integer(inner) { origins.insert(number) }
        case 600:  // allApplications [600] EXPLICIT NULL
            allApplications = true
        case 704 where hardwareEnforced:  // rootOfTrust [704] EXPLICIT RootOfTrust
            guard case .constructed(let parts) = inner.content else { return false }
            let items = Array(parts)
            guard items.count >= 3, case .primitive(let locked) = items[1].content, locked.count == 1,
                let state = Self.integer(items[2]).flatMap(VerifiedBootState.init(rawValue:))
            else { return false }
            rootOfTrust = RootOfTrust(deviceLocked: locked.first != 0, verifiedBootState: state)
        case 709:  // attestationApplicationId [709] EXPLICIT OCTET STRING (DER inside)
            guard case .primitive(let bytes) = inner.content, let parsed = Self.applicationID(Array(bytes)) else { return false }
            applicationID = parsed
        default:
            break
        }
        return true
    }

    private static func applicationID(_ der: [UInt8]) -> ApplicationID? {
        guard let root = try? DER.parse(der), case .constructed(let sets) = root.content else { return nil }
        let parts = Array(sets)
        guard parts.count == 2, case .constructed(let infos) = parts[0].content, case .constructed(let digests) = parts[1].content else {
            return nil
        }
        var names: [String] = []
        for info in infos {
            guard case .constructed(let members) = info.content, let first = members.first(where: { _ in true }),
                case .primitive(let name) = first.content, let text = String(validating: Array(name), as: UTF8.self)
            else { return nil }
            names.append(text)
        }
        var signatureDigests: [[UInt8]] = []
        for digest in digests {
            guard case .primitive(let bytes) = digest.content else { return nil }
            signatureDigests.append(Array(bytes))
        }
        return ApplicationID(packageNames: names, signatureDigests: signatureDigests)
    }

    /// An INTEGER or ENUMERATED of up to 8 bytes.
    static func integer(_ node: ASN1Node) -> Int64? {
        guard node.identifier == .integer || node.identifier == .enumerated, case .primitive(let bytes) = node.content, !bytes.isEmpty,
            bytes.count <= 8
        else { return nil }
        var value: Int64 = bytes.first! & 0x80 != 0 ? -1 : 0
        for byte in bytes { value = value << 8 | Int64(byte) }
        return value
    }
}
