/// `none` (WebAuthn section 8.7): no attestation; the statement must be an empty map.
public struct NoneAttestation: AttestationFormat {
    public let identifier = "none"
    public init() {}

    public func verify(_ input: AttestationInput) async throws(WebAuthnError) -> AttestationResult {
        guard let entries = input.statement.mapValue, entries.isEmpty else {
            throw .attestationInvalid(format: identifier, reason: "attStmt must be an empty map")
        }
        return AttestationResult(type: .none)
    }
}
