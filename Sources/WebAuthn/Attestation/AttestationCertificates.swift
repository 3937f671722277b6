import CBOR
import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// Certificate handling shared by the x5c-based formats.
enum AttestationCertificates {
    /// Parses `x5c` (an array of DER byte strings, leaf first).
    static func chain(_ item: CBOR?, format: String) throws(WebAuthnError) -> [Certificate] {
        guard let items = item?.arrayValue, !items.isEmpty else {
            throw .attestationInvalid(format: format, reason: "x5c is missing or empty")
        }
        var certificates: [Certificate] = []
        for element in items {
            guard let der = element.bytesValue else { throw .attestationInvalid(format: format, reason: "x5c holds a non-bytes item") }
            certificates.append(try parse(der, format: format))
        }
        return certificates
    }

    static func parse(_ der: [UInt8], format: String) throws(WebAuthnError) -> Certificate {
        do {
            return try Certificate(derEncoded: der)
        } catch {
            throw .attestationInvalid(format: format, reason: "a certificate is not valid DER")
        }
    }

    /// Checks that `x5c` is a chain (each certificate signed by the next: the statement's own
    /// structure) and, when the policy has trust anchors, validates the path to one of them
    /// with `CertificatePathValidator` under the format's `rules` (section 7.1 steps 24–25).
    ///
    /// Why a chain without anchors is not validated further: an unanchored chain proves nothing
    /// about the authenticator (whoever made it chose its dates and extensions too), so it is
    /// reported as not anchored, which a policy requiring trust refuses.
    /// - Returns: whether the chain is anchored.
    static func validate(
        _ chain: [Certificate], policy: VerificationPolicy, format: String, rules: PathRules = .rfc5280
    ) async throws(WebAuthnError) -> Bool {
        for index in chain.indices.dropLast() {
            let (child, parent) = (chain[index], chain[index + 1])
            guard child.issuer == parent.subject, parent.publicKey.isValidSignature(child.signature, for: child) else {
                throw .attestationInvalid(format: format, reason: "x5c is not a chain: \(child.subject) is not signed by the next")
            }
        }
        guard !policy.trustAnchors.isEmpty else {
            if policy.requireTrustedAttestation {
                throw .attestationUntrusted(format: format, reason: "no trust anchors are configured")
            }
            return false
        }
        let validator = CertificatePathValidator(trustAnchors: policy.trustAnchors, rules: rules, verificationTime: policy.verificationTime)
        do {
            _ = try await validator.validate(chain)
            return true
        } catch {
            if policy.requireTrustedAttestation { throw .certificatePathRefused(format: format, refusal: error) }
            return false
        }
    }

    /// Verifies an attestation signature made with a certificate's key and a COSE algorithm.
    static func verify(
        _ signature: [UInt8], over data: [UInt8], with key: Certificate.PublicKey, algorithm: Int64
    ) -> Bool {
        switch COSEAlgorithm(rawValue: algorithm) {
        case .es256:
            guard let key = P256.Signing.PublicKey(key), let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature)
            else { return false }
            return key.isValidSignature(parsed, for: data)
        case .es384:
            guard let key = P384.Signing.PublicKey(key), let parsed = try? P384.Signing.ECDSASignature(derRepresentation: signature)
            else { return false }
            return key.isValidSignature(parsed, for: data)
        case .edDSA:
            guard let key = Curve25519.Signing.PublicKey(key) else { return false }
            return key.isValidSignature(signature, for: data)
        case .rs256:
            guard let key = _RSA.Signing.PublicKey(key) else { return false }
            return key.isValidSignature(.init(rawRepresentation: signature), for: SHA256.hash(data: data), padding: .insecurePKCS1v1_5)
        case .ps256:
            guard let key = _RSA.Signing.PublicKey(key) else { return false }
            return key.isValidSignature(.init(rawRepresentation: signature), for: SHA256.hash(data: data), padding: .PSS)
        case .rs1:
            guard let key = _RSA.Signing.PublicKey(key) else { return false }
            return key.isValidSignature(.init(rawRepresentation: signature), for: Insecure.SHA1.hash(data: data), padding: .insecurePKCS1v1_5)
        case nil:
            return false
        }
    }

    /// The raw value of an extension, if present.
    static func extensionValue(_ certificate: Certificate, oid: ASN1ObjectIdentifier) -> ArraySlice<UInt8>? {
        certificate.extensions[oid: oid]?.value
    }

    /// id-fido-gen-ce-aaguid (1.3.6.1.4.1.45724.1.1.4): when present it must equal the AAGUID
    /// and must not be critical (sections 8.2.1 and 8.3.1).
    static func checkAAGUIDExtension(_ certificate: Certificate, aaguid: [UInt8], format: String) throws(WebAuthnError) {
        guard let ext = certificate.extensions[oid: [1, 3, 6, 1, 4, 1, 45724, 1, 1, 4]] else { return }
        guard !ext.critical else { throw .attestationInvalid(format: format, reason: "the AAGUID extension is critical") }
        // The value is an OCTET STRING wrapping the 16 bytes.
        guard let node = try? DER.parse(Array(ext.value)), case .primitive(let bytes) = node.content, Array(bytes) == aaguid else {
            throw .attestationInvalid(format: format, reason: "the certificate's AAGUID does not match authenticator data")
        }
    }

    /// Basic constraints must say "not a CA" (sections 8.2.1, 8.3.1).
    static func checkNotCA(_ certificate: Certificate, format: String) throws(WebAuthnError) {
        if let constraints = try? certificate.extensions.basicConstraints, case .isCertificateAuthority = constraints {
            throw .attestationInvalid(format: format, reason: "the attestation certificate is a CA")
        }
    }

    /// Whether a certificate's key is the credential's key (android-key, apple).
    static func sameKey(_ certificate: Certificate, _ credential: COSEKey) -> Bool {
        switch credential.material {
        case .p256(let key):
            return P256.Signing.PublicKey(certificate.publicKey)?.x963Representation == key.x963Representation
        case .ed25519(let key):
            return Curve25519.Signing.PublicKey(certificate.publicKey)?.rawRepresentation == key.rawRepresentation
        case .rsa(let key, _, _):
            return _RSA.Signing.PublicKey(certificate.publicKey)?.derRepresentation == key.derRepresentation
        }
    }
}
