import Crypto

/// The client-data and authenticator-data checks registration (§7.1) and assertion (§7.2)
/// share, each in its spec order.
enum CeremonyChecks {
    /// §7.1 steps 5–11 / §7.2 steps 9–15: parse clientDataJSON and check type, challenge,
    /// origin and cross-origin embedding.
    static func clientData(
        _ bytes: [UInt8], type: String, challenge: [UInt8], origins: OriginPolicy, policy: VerificationPolicy
    ) throws(WebAuthnError) -> CollectedClientData {
        let clientData = try CollectedClientData(json: bytes)
        guard clientData.type == type else { throw .clientDataTypeMismatch(expected: type, received: clientData.type) }
        guard let received = Base64URL.decode(clientData.challenge), constantTimeEqual(received, challenge) else {
            throw .challengeMismatch
        }
        guard origins.allows(clientData.origin) else { throw .originMismatch(clientData.origin) }
        if clientData.crossOrigin == true || clientData.topOrigin != nil {
            guard policy.allowCrossOrigin else { throw .crossOriginNotAllowed }
        }
        return clientData
    }

    /// §7.1 steps 14–17 / §7.2 steps 16–19: RP ID hash, UP, UV, BE/BS consistency.
    static func authenticatorData(_ data: AuthenticatorData, rpID: String, policy: VerificationPolicy) throws(WebAuthnError) {
        guard constantTimeEqual(data.rpIDHash, Array(SHA256.hash(data: Array(rpID.utf8)))) else { throw .rpIDHashMismatch }
        if policy.requireUserPresence && !data.flags.contains(.userPresent) { throw .userPresenceRequired }
        if policy.requireUserVerification && !data.flags.contains(.userVerified) { throw .userVerificationRequired }
        if data.flags.contains(.backedUp) && !data.flags.contains(.backupEligible) { throw .invalidBackupFlags }
    }

    /// Compares without an early exit, so timing does not reveal where two values differ.
    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
