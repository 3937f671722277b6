import CBOR
import Crypto

/// What the relying party stored for a credential at enrollment (its "credential record").
public struct StoredCredential: Sendable {
    public var credentialID: [UInt8]
    public var publicKey: COSEKey
    public var signCount: UInt32
    /// The user handle the credential was created for, if known.
    public var userHandle: [UInt8]?
    /// BE at enrollment, if recorded (§7.2 step 20).
    public var backupEligible: Bool?

    public init(credentialID: [UInt8], publicKey: COSEKey, signCount: UInt32, userHandle: [UInt8]? = nil, backupEligible: Bool? = nil) {
        self.credentialID = credentialID
        self.publicKey = publicKey
        self.signCount = signCount
        self.userHandle = userHandle
        self.backupEligible = backupEligible
    }
}

/// What a verified assertion yields: the values to update the credential record with.
public struct AssertionVerdict: Sendable {
    public var credentialID: [UInt8]
    public var newSignCount: UInt32
    public var flags: AuthenticatorFlags
    public var userHandle: [UInt8]?
    public var extensions: CBOR?

    public var userVerified: Bool { flags.contains(.userVerified) }
    public var backupEligible: Bool { flags.contains(.backupEligible) }
    public var backedUp: Bool { flags.contains(.backedUp) }
}

/// Verifies an authentication assertion (WebAuthn L3 section 7.2). Stateless.
public struct AssertionVerifier: Sendable {
    public init() {}

    /// Verifies `credential` against the stored credential record.
    /// - Throws: `WebAuthnError` naming the failed check; `.signCountNotIncreasing` signals a
    ///   possibly cloned authenticator (the caller records it).
    public func verify(
        _ credential: AssertionCredential, expectedChallenge: [UInt8], expectedRPID: String, origins: OriginPolicy,
        policy: VerificationPolicy, stored: StoredCredential
    ) throws(WebAuthnError) -> AssertionVerdict {
        guard credential.type == "public-key" else { throw .malformedCredential("type is not public-key") }
        let rawID = try base64Member(credential.rawId, "rawId")
        guard Base64URL.decode(credential.id) == rawID else { throw .malformedCredential("id and rawId differ") }
        // §7.2 step 7: the credential is the stored one.
        guard CeremonyChecks.constantTimeEqual(rawID, stored.credentialID) else { throw .unknownCredential }
        let clientDataJSON = try base64Member(credential.response.clientDataJSON, "response.clientDataJSON")
        let authenticatorDataBytes = try base64Member(credential.response.authenticatorData, "response.authenticatorData")
        let signature = try base64Member(credential.response.signature, "response.signature")
        var userHandle: [UInt8]? = nil
        if let handle = credential.response.userHandle, !handle.isEmpty {
            userHandle = try base64Member(handle, "response.userHandle")
        }
        // §7.2 step 6: a user handle, when given, names the credential's user.
        if let userHandle, let expected = stored.userHandle, !CeremonyChecks.constantTimeEqual(userHandle, expected) {
            throw .userHandleMismatch
        }
        // §7.2 steps 9–15.
        _ = try CeremonyChecks.clientData(clientDataJSON, type: "webauthn.get", challenge: expectedChallenge, origins: origins, policy: policy)
        let authenticatorData = try AuthenticatorData(authenticatorDataBytes)
        // §7.2 steps 16–19.
        try CeremonyChecks.authenticatorData(authenticatorData, rpID: expectedRPID, policy: policy)
        // §7.2 step 20: backup eligibility is fixed at creation.
        if let eligible = stored.backupEligible, eligible != authenticatorData.flags.contains(.backupEligible) {
            throw .backupEligibilityChanged
        }
        // §7.2 steps 23–24: the signature over authenticatorData || SHA-256(clientDataJSON).
        let signed = authenticatorDataBytes + Array(SHA256.hash(data: clientDataJSON))
        guard stored.publicKey.isValidSignature(signature, for: signed) else { throw .signatureInvalid }
        // §7.2 step 25: when either counter is non-zero, the new one must be greater.
        let received = authenticatorData.signCount
        if received != 0 || stored.signCount != 0 {
            guard received > stored.signCount else { throw .signCountNotIncreasing(stored: stored.signCount, received: received) }
        }
        return AssertionVerdict(
            credentialID: rawID, newSignCount: received, flags: authenticatorData.flags, userHandle: userHandle,
            extensions: authenticatorData.extensions)
    }
}
