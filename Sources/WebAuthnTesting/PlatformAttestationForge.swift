import CBOR
import Crypto
import Foundation
import SwiftASN1
import WebAuthn
import X509

/// Test certificate authorities standing in for Apple's App Attestation root and Google's
/// hardware attestation roots (issue 47), and the evidence apps send, made exactly in the
/// platforms' formats so that the verifiers run unchanged:
///
/// - App Attest attestation object: CBOR `{fmt: "apple-appattest", attStmt: {x5c: [credCert,
///   intermediate], receipt}, authData}`; authData = SHA-256(App ID) ‖ flags 0x40 (AT) ‖
///   counter 0 ‖ AAGUID (`appattest` + 7 zero bytes, or `appattestdevelop`) ‖ credential id
///   length 32 ‖ key id ‖ COSE EC2 key; credCert's extension 1.2.840.113635.100.8.2 holds
///   `SEQUENCE { [1] EXPLICIT OCTET STRING nonce }`, nonce = SHA-256(authData ‖ clientDataHash).
/// - App Attest assertion: CBOR `{signature, authenticatorData}`; authenticatorData = SHA-256(App
///   ID) ‖ flags 0x40 ‖ counter (37 bytes); signature = ECDSA-SHA256 (DER) over SHA-256(authenticatorData ‖ clientDataHash).
/// - Android: a chain leaf, intermediate, root; the leaf's extension 1.3.6.1.4.1.11129.2.1.17
///   is a KeyDescription (attestation version 400, security levels, challenge, the
///   software-enforced attestationApplicationId [709] and the hardware-enforced purpose [1],
///   origin [702] and rootOfTrust [704]).
public struct PlatformAttestationForge: Sendable {
    /// A root and an intermediate.
    public struct Authority: Sendable {
        public let root: Certificate
        let intermediate: Certificate
        let intermediateKey: P256.Signing.PrivateKey
    }

    public let apple: Authority
    public let google: Authority

    public init() throws {
        apple = try Self.authority(name: "Test App Attestation")
        google = try Self.authority(name: "Test Key Attestation")
    }

    static func authority(name: String) throws -> Authority {
        let rootKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName { CommonName("\(name) Root CA") }
        let root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: Date(timeIntervalSinceNow: -86_400),
            notValidAfter: Date(timeIntervalSinceNow: 86_400 * 3650), issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(rootKey))
        let intermediateKey = P256.Signing.PrivateKey()
        let intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey), notValidBefore: Date(timeIntervalSinceNow: -86_400),
            notValidAfter: Date(timeIntervalSinceNow: 86_400 * 365), issuer: rootName, subject: try DistinguishedName { CommonName("\(name) CA 1") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(rootKey))
        return Authority(root: root, intermediate: intermediate, intermediateKey: intermediateKey)
    }

    /// A leaf for `key` under `authority`, with one extension.
    static func leaf(_ key: P256.Signing.PublicKey, authority: Authority, name: String, oid: ASN1ObjectIdentifier, value: [UInt8], days: Double = 3)
        throws -> [UInt8]
    {
        let certificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key), notValidBefore: Date(timeIntervalSinceNow: -3600),
            notValidAfter: Date(timeIntervalSinceNow: 86_400 * days), issuer: authority.intermediate.subject,
            subject: try DistinguishedName { CommonName(name) }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions { Certificate.Extension(oid: oid, critical: false, value: ArraySlice(value)) },
            issuerPrivateKey: .init(authority.intermediateKey))
        return try der(certificate)
    }

    public static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    // MARK: Apple App Attest

    /// An App Attest key as the Secure Enclave holds it.
    public struct AppAttestKey: Sendable {
        public let privateKey = P256.Signing.PrivateKey()
        public var keyID: [UInt8] { Array(SHA256.hash(data: privateKey.publicKey.x963Representation)) }
        public init() {}
    }

    /// What can be varied to build a failing case; defaults are a valid attestation.
    public struct AppAttestOptions: Sendable {
        public var development = false
        public var counter: UInt32 = 0
        /// Certify this nonce instead of the right one.
        public var nonceOverride: [UInt8]? = nil
        /// Put this credential id in authData instead of the key id.
        public var credentialIDOverride: [UInt8]? = nil
        public init() {}
    }

    /// `attestKey(_:clientDataHash:)`'s answer.
    public func appAttestation(key: AppAttestKey, appID: String, clientDataHash: [UInt8], options: AppAttestOptions = AppAttestOptions()) throws -> [UInt8] {
        let point = key.privateKey.publicKey.x963Representation
        let cose = CBOREncoder.encode(
            .map([
                CBORMapEntry(.int(1), .int(2)), CBORMapEntry(.int(3), .int(-7)), CBORMapEntry(.int(-1), .int(1)),
                CBORMapEntry(.int(-2), .bytes(Array(point[1..<33]))), CBORMapEntry(.int(-3), .bytes(Array(point[33..<65]))),
            ]))
        let aaguid = options.development ? Array("appattestdevelop".utf8) : Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
        let credentialID = options.credentialIDOverride ?? key.keyID
        let authData =
            Array(SHA256.hash(data: Array(appID.utf8))) + [0x40] + Self.bigEndian(options.counter) + aaguid
            + [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)] + credentialID + cose
        let nonce = options.nonceOverride ?? Array(SHA256.hash(data: authData + clientDataHash))
        // SEQUENCE { [1] EXPLICIT OCTET STRING nonce }
        let value = Self.tlv([0x30], Self.tlv([0xA1], Self.tlv([0x04], nonce)))
        let credCert = try Self.leaf(
            key.privateKey.publicKey, authority: apple, name: Base64URL.encode(key.keyID), oid: [1, 2, 840, 113_635, 100, 8, 2], value: value)
        let statement = CBOR.map([
            CBORMapEntry(.text("x5c"), .array([.bytes(credCert), .bytes(try Self.der(apple.intermediate))])),
            CBORMapEntry(.text("receipt"), .bytes(Array("test receipt".utf8))),
        ])
        return CBOREncoder.encode(
            .map([
                CBORMapEntry(.text("fmt"), .text("apple-appattest")), CBORMapEntry(.text("attStmt"), statement),
                CBORMapEntry(.text("authData"), .bytes(authData)),
            ]))
    }

    /// `generateAssertion(_:clientDataHash:)`'s answer.
    public func appAssertion(key: AppAttestKey, appID: String, clientDataHash: [UInt8], counter: UInt32) throws -> [UInt8] {
        let authData = Array(SHA256.hash(data: Array(appID.utf8))) + [0x40] + Self.bigEndian(counter)
        let nonce = Array(SHA256.hash(data: authData + clientDataHash))
        let signature = try key.privateKey.signature(for: nonce).derRepresentation
        return CBOREncoder.encode(
            .map([CBORMapEntry(.text("signature"), .bytes(Array(signature))), CBORMapEntry(.text("authenticatorData"), .bytes(authData))]))
    }

    // MARK: Android key attestation

    /// What a KeyStore key's description says; defaults are a genuine app on a locked, verified device.
    public struct AndroidKeyOptions: Sendable {
        public var securityLevel: UInt8 = 1
        public var deviceLocked = true
        /// 0 verified, 1 self-signed, 2 unverified, 3 failed.
        public var verifiedBootState: UInt8 = 0
        public init() {}
    }

    /// `KeyStore.getCertificateChain(alias)` for a key made with `setAttestationChallenge(challenge)`.
    public func androidChain(
        key: P256.Signing.PublicKey, challenge: [UInt8], packageName: String, signatureDigest: [UInt8], options: AndroidKeyOptions = AndroidKeyOptions()
    ) throws -> [[UInt8]] {
        let applicationID = Self.tlv(
            [0x30],
            Self.tlv([0x31], Self.tlv([0x30], Self.tlv([0x04], Array(packageName.utf8)) + Self.tlv([0x02], [1])))
                + Self.tlv([0x31], Self.tlv([0x04], signatureDigest)))
        let software = Self.tlv([0x30], Self.tlv([0xBF, 0x85, 0x45], Self.tlv([0x04], applicationID)))  // [709]
        let rootOfTrust = Self.tlv(
            [0x30],
            Self.tlv([0x04], [UInt8](repeating: 0x11, count: 32)) + Self.tlv([0x01], [options.deviceLocked ? 0xFF : 0x00])
                + Self.tlv([0x0A], [options.verifiedBootState]) + Self.tlv([0x04], [UInt8](repeating: 0x22, count: 32)))
        let hardware = Self.tlv(
            [0x30],
            Self.tlv([0xA1], Self.tlv([0x31], Self.tlv([0x02], [2])))  // purpose [1]: SIGN
                + Self.tlv([0xBF, 0x85, 0x3E], Self.tlv([0x02], [0]))  // origin [702]: GENERATED
                + Self.tlv([0xBF, 0x85, 0x40], rootOfTrust))  // rootOfTrust [704]
        let description = Self.tlv(
            [0x30],
            Self.tlv([0x02], [0x01, 0x90]) + Self.tlv([0x0A], [options.securityLevel]) + Self.tlv([0x02], [0x01, 0x90])
                + Self.tlv([0x0A], [options.securityLevel]) + Self.tlv([0x04], challenge) + Self.tlv([0x04], []) + software + hardware)
        let leaf = try Self.leaf(key, authority: google, name: "Android Keystore Key", oid: [1, 3, 6, 1, 4, 1, 11129, 2, 1, 17], value: description, days: 3650)
        return [leaf, try Self.der(google.intermediate), try Self.der(google.root)]
    }

    // MARK: DER

    static func tlv(_ tag: [UInt8], _ content: [UInt8]) -> [UInt8] {
        let count = content.count
        let length: [UInt8] =
            count < 0x80 ? [UInt8(count)] : count < 0x100 ? [0x81, UInt8(count)] : [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
        return tag + length + content
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
