import CBOR
import Crypto
import X509

/// What a verified registration yields: what to store for the credential, and how it was attested.
public struct RegistrationVerdict: Sendable {
    public var credentialID: [UInt8]
    public var publicKey: COSEKey
    public var signCount: UInt32
    public var flags: AuthenticatorFlags
    public var aaguid: [UInt8]
    public var attestationFormat: String
    public var attestation: AttestationResult
    public var transports: [String]
    public var extensions: CBOR?

    public var userVerified: Bool { flags.contains(.userVerified) }
    public var backupEligible: Bool { flags.contains(.backupEligible) }
    public var backedUp: Bool { flags.contains(.backedUp) }
}

/// Verifies a registration ceremony (WebAuthn L3 section 7.1). Stateless: everything the
/// relying party expects is passed in; nothing is stored.
public struct RegistrationVerifier: Sendable {
    public var formats: AttestationFormatRegistry

    public init(formats: AttestationFormatRegistry = .standard) {
        self.formats = formats
    }

    /// Verifies `credential` against what the relying party issued.
    /// - Parameters:
    ///   - expectedChallenge: the challenge sent in the creation options.
    ///   - expectedRPID: the RP ID the credential must be scoped to.
    ///   - origins: the origins accepted in client data.
    ///   - policy: UP/UV, algorithms, cross-origin, trust anchors, verification time.
    /// - Throws: `WebAuthnError` naming the failed check.
    public func verify(
        _ credential: RegistrationCredential, expectedChallenge: [UInt8], expectedRPID: String, origins: OriginPolicy,
        policy: VerificationPolicy
    ) async throws(WebAuthnError) -> RegistrationVerdict {
        guard credential.type == "public-key" else { throw .malformedCredential("type is not public-key") }
        let rawID = try base64Member(credential.rawId, "rawId")
        guard Base64URL.decode(credential.id) == rawID else { throw .malformedCredential("id and rawId differ") }
        let clientDataJSON = try base64Member(credential.response.clientDataJSON, "response.clientDataJSON")
        let attestationObject = try base64Member(credential.response.attestationObject, "response.attestationObject")

        // §7.1 steps 5–11.
        _ = try CeremonyChecks.clientData(
            clientDataJSON, type: "webauthn.create", challenge: expectedChallenge, origins: origins, policy: policy)
        // §7.1 step 12.
        let clientDataHash = Array(SHA256.hash(data: clientDataJSON))
        // §7.1 step 13: CBOR-decode the attestation object into fmt, authData, attStmt.
        let object: CBOR
        do {
            object = try CBORDecoder().decode(attestationObject)
        } catch {
            throw .malformedCBOR(error)
        }
        guard let fmt = object[text: "fmt"]?.textValue, let authDataBytes = object[text: "authData"]?.bytesValue,
            let statement = object[text: "attStmt"], statement.mapValue != nil
        else {
            throw .malformedAttestationObject("needs fmt (text), authData (bytes) and attStmt (map)")
        }
        let authenticatorData = try AuthenticatorData(authDataBytes)
        // §7.1 steps 14–17.
        try CeremonyChecks.authenticatorData(authenticatorData, rpID: expectedRPID, policy: policy)
        guard let attested = authenticatorData.attestedCredential else { throw .missingAttestedCredential }
        // §7.1 step 20: the key's algorithm was offered.
        guard policy.allowedAlgorithms.contains(attested.publicKey.algorithm) else {
            throw .algorithmNotAllowed(attested.publicKey.algorithm)
        }
        // §7.1 step 26 (length checked while parsing); the credential id is the one the client names.
        guard attested.credentialID == rawID else { throw .malformedCredential("rawId is not the attested credential id") }
        // §7.1 steps 22–25: the format's verification procedure, then trust.
        guard let format = formats.format(fmt) else { throw .unsupportedAttestationFormat(fmt) }
        let attestation = try await format.verify(
            AttestationInput(
                statement: statement, authenticatorData: authenticatorData, credential: attested, clientDataHash: clientDataHash,
                policy: policy))
        return RegistrationVerdict(
            credentialID: attested.credentialID, publicKey: attested.publicKey, signCount: authenticatorData.signCount,
            flags: authenticatorData.flags, aaguid: attested.aaguid, attestationFormat: fmt, attestation: attestation,
            transports: credential.response.transports ?? credential.transports ?? [], extensions: authenticatorData.extensions)
    }
}
