import CBOR

/// Why a registration or assertion was refused. Each case names the check that failed.
public enum WebAuthnError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong inside authenticator data.
    public enum AuthenticatorDataProblem: Hashable, Sendable {
        case tooShort
        case attestedCredentialTruncated
        case publicKey(String)
        case extensionsMissing
        case extensions(String)
        case trailingBytes(Int)
    }

    /// The credential JSON is not the PublicKeyCredential shape (a member missing or of the wrong type).
    case malformedCredential(String)
    /// A member that must be base64url is not.
    case malformedBase64(field: String)
    /// The attestation object is not acceptable CBOR.
    case malformedCBOR(CBORError)
    /// The attestation object is CBOR but not {fmt, attStmt, authData}.
    case malformedAttestationObject(String)
    case malformedAuthenticatorData(AuthenticatorDataProblem)
    case malformedClientData
    case malformedPublicKey(String)
    /// §7.1 step 7 / §7.2 step 11.
    case clientDataTypeMismatch(expected: String, received: String)
    /// §7.1 step 8 / §7.2 step 12.
    case challengeMismatch
    /// §7.1 step 9 / §7.2 step 13.
    case originMismatch(String)
    /// §7.1 step 10 / §7.2 step 14.
    case crossOriginNotAllowed
    /// §7.1 step 14 / §7.2 step 16.
    case rpIDHashMismatch
    /// §7.1 step 15 / §7.2 step 17.
    case userPresenceRequired
    /// §7.1 step 16 / §7.2 step 18.
    case userVerificationRequired
    /// §7.1 step 17 / §7.2 step 19: BS set without BE.
    case invalidBackupFlags
    /// §7.2 step 20: BE differs from what was stored.
    case backupEligibilityChanged
    /// §7.1 step 20: the key's algorithm was not offered in pubKeyCredParams.
    case algorithmNotAllowed(COSEAlgorithm)
    /// A COSE algorithm this library does not verify.
    case unsupportedAlgorithm(Int64)
    /// §7.1 step 22.
    case unsupportedAttestationFormat(String)
    /// §7.1 step 23: the attestation statement does not verify.
    case attestationInvalid(format: String, reason: String)
    /// §7.1 steps 24–25: the attestation did not chain to a trust anchor the policy requires.
    case attestationUntrusted(format: String, reason: String)
    /// The attestation's certificate path was refused (`CertificatePathValidator`): which check.
    case certificatePathRefused(format: String, refusal: PathRefusal)
    /// §7.1 step 26.
    case credentialIDTooLong(Int)
    /// Registration without attested credential data (AT clear).
    case missingAttestedCredential
    /// §7.2 step 7: the credential is not the stored one.
    case unknownCredential
    /// §7.2 step 6: the user handle does not match the credential's user.
    case userHandleMismatch
    /// §7.2 step 24.
    case signatureInvalid
    /// §7.2 step 25: the counter did not increase (possible cloned authenticator).
    case signCountNotIncreasing(stored: UInt32, received: UInt32)

    /// A short stable tag (the vectors' `reason` vocabulary), for logs and tests.
    public var reason: String {
        switch self {
        case .malformedCredential: return "malformed_credential"
        case .malformedBase64: return "malformed_base64"
        case .malformedCBOR(.trailingBytes): return "malformed_cbor_trailing_bytes"
        case .malformedCBOR: return "malformed_cbor"
        case .malformedAttestationObject: return "malformed_attestation_object"
        case .malformedAuthenticatorData(.trailingBytes): return "malformed_authenticator_data_trailing_bytes"
        case .malformedAuthenticatorData(.extensionsMissing), .malformedAuthenticatorData(.extensions):
            return "malformed_authenticator_data_extensions"
        case .malformedAuthenticatorData: return "malformed_authenticator_data"
        case .malformedClientData: return "malformed_client_data"
        case .malformedPublicKey: return "malformed_public_key"
        case .clientDataTypeMismatch: return "client_data_type_mismatch"
        case .challengeMismatch: return "challenge_mismatch"
        case .originMismatch: return "origin_mismatch"
        case .crossOriginNotAllowed: return "cross_origin_not_allowed"
        case .rpIDHashMismatch: return "rp_id_hash_mismatch"
        case .userPresenceRequired: return "user_presence_required"
        case .userVerificationRequired: return "user_verification_required"
        case .invalidBackupFlags: return "invalid_backup_flags"
        case .backupEligibilityChanged: return "backup_eligibility_changed"
        case .algorithmNotAllowed: return "algorithm_not_in_pubKeyCredParams"
        case .unsupportedAlgorithm: return "unsupported_algorithm"
        case .unsupportedAttestationFormat: return "unsupported_attestation_format"
        case .attestationInvalid: return "attestation_invalid"
        case .attestationUntrusted, .certificatePathRefused: return "attestation_untrusted"
        case .credentialIDTooLong: return "credential_id_too_long"
        case .missingAttestedCredential: return "missing_attested_credential"
        case .unknownCredential: return "unknown_credential"
        case .userHandleMismatch: return "user_handle_mismatch"
        case .signatureInvalid: return "signature_invalid"
        case .signCountNotIncreasing: return "sign_count_not_greater_than_stored"
        }
    }

    public var description: String {
        switch self {
        case .malformedCredential(let what): return "malformed credential: \(what)"
        case .malformedBase64(let field): return "\(field) is not base64url"
        case .malformedCBOR(let error): return "malformed attestation object: \(error)"
        case .malformedAttestationObject(let what): return "malformed attestation object: \(what)"
        case .malformedAuthenticatorData(let problem): return "malformed authenticator data: \(problem)"
        case .malformedClientData: return "clientDataJSON is not the expected JSON object"
        case .malformedPublicKey(let what): return "malformed credential public key: \(what)"
        case .clientDataTypeMismatch(let expected, let received): return "client data type is \(received), expected \(expected)"
        case .challengeMismatch: return "the challenge does not match"
        case .originMismatch(let origin): return "origin \(origin) is not allowed"
        case .crossOriginNotAllowed: return "cross-origin ceremonies are not allowed"
        case .rpIDHashMismatch: return "rpIdHash is not the SHA-256 of the RP ID"
        case .userPresenceRequired: return "user presence (UP) is required"
        case .userVerificationRequired: return "user verification (UV) is required"
        case .invalidBackupFlags: return "backed up (BS) is set without backup eligible (BE)"
        case .backupEligibilityChanged: return "backup eligibility (BE) changed since enrollment"
        case .algorithmNotAllowed(let algorithm): return "algorithm \(algorithm) was not offered"
        case .unsupportedAlgorithm(let value): return "COSE algorithm \(value) is not supported"
        case .unsupportedAttestationFormat(let format): return "attestation format \(format) is not supported"
        case .attestationInvalid(let format, let reason): return "\(format) attestation invalid: \(reason)"
        case .attestationUntrusted(let format, let reason): return "\(format) attestation not trusted: \(reason)"
        case .certificatePathRefused(let format, let refusal): return "\(format) attestation not trusted: the certificate path was refused (\(refusal))"
        case .credentialIDTooLong(let length): return "credential id of \(length) bytes exceeds 1023"
        case .missingAttestedCredential: return "authenticator data carries no attested credential"
        case .unknownCredential: return "unknown credential"
        case .userHandleMismatch: return "user handle does not match the credential's user"
        case .signatureInvalid: return "signature invalid"
        case .signCountNotIncreasing(let stored, let received): return "sign count \(received) not greater than stored \(stored)"
        }
    }
}
