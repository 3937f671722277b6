import X509

/// `packed` (WebAuthn section 8.2): self attestation, or a signature by an attestation
/// certificate (x5c).
public struct PackedAttestation: AttestationFormat {
    public let identifier = "packed"
    public init() {}

    public func verify(_ input: AttestationInput) async throws(WebAuthnError) -> AttestationResult {
        let statement = input.statement
        // §8.2 step 1: attStmt is {alg, sig, x5c?}.
        guard let alg = statement[text: "alg"]?.intValue, let sig = statement[text: "sig"]?.bytesValue else {
            throw .attestationInvalid(format: identifier, reason: "attStmt needs alg and sig")
        }
        if statement[text: "x5c"] != nil {
            // §8.2 step 2: x5c present.
            let chain = try AttestationCertificates.chain(statement[text: "x5c"], format: identifier)
            let leaf = chain[0]
            guard AttestationCertificates.verify(sig, over: input.signedData, with: leaf.publicKey, algorithm: alg) else {
                throw .attestationInvalid(format: identifier, reason: "sig does not verify with the attestation certificate")
            }
            try checkCertificateRequirements(leaf, aaguid: input.credential.aaguid)
            let anchored = try await AttestationCertificates.validate(chain, policy: input.policy, format: identifier)
            return AttestationResult(type: .basic, trustPath: chain, anchored: anchored)
        }
        // §8.2 step 3: self attestation: alg is the credential key's, sig by the credential key.
        guard alg == input.credential.publicKey.algorithm.rawValue else {
            throw .attestationInvalid(format: identifier, reason: "self attestation alg differs from the credential key's")
        }
        guard input.credential.publicKey.isValidSignature(sig, for: input.signedData) else {
            throw .attestationInvalid(format: identifier, reason: "self attestation sig does not verify")
        }
        return AttestationResult(type: .selfAttestation)
    }

    /// §8.2.1: version 3; subject C, O, OU "Authenticator Attestation", CN; not a CA; AAGUID extension matches.
    private func checkCertificateRequirements(_ certificate: Certificate, aaguid: [UInt8]) throws(WebAuthnError) {
        guard certificate.version == .v3 else { throw .attestationInvalid(format: identifier, reason: "certificate is not version 3") }
        let subject = certificate.subject
        let hasUnit = subject.contains { rdn in
            rdn.contains { $0.type == .RDNAttributeType.organizationalUnitName && "\($0.value)" == "Authenticator Attestation" }
        }
        let types = Set(subject.flatMap { $0.map(\.type) })
        guard hasUnit, types.contains(.RDNAttributeType.countryName), types.contains(.RDNAttributeType.organizationName),
            types.contains(.RDNAttributeType.commonName)
        else {
            throw .attestationInvalid(format: identifier, reason: "certificate subject lacks C, O, OU=Authenticator Attestation or CN")
        }
        try AttestationCertificates.checkNotCA(certificate, format: identifier)
        try AttestationCertificates.checkAAGUIDExtension(certificate, aaguid: aaguid, format: identifier)
    }
}
