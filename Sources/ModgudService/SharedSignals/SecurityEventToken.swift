import Foundation
import JWTKit

/// The claims of one SET (RFC 8417 section 2.2 as SSF 1.0 section 4 profiles it): no `sub`
/// and no `exp`, the subject in `sub_id`, one event in `events`.
struct SecurityEventClaims: JWTPayload, Equatable {
    var iss: String
    var jti: String
    var iat: Int
    var aud: String
    /// SSF 1.0 section 4.1.8: the log position of the event that caused the SET.
    var txn: String
    var subID: JWTHeaderField
    var events: [String: JWTHeaderField]

    enum CodingKeys: String, CodingKey {
        case iss, jti, iat, aud, txn, events
        case subID = "sub_id"
    }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Builds a SET's claims from an outbox row (pure: the subject and any profile claims are
/// resolved by the caller, `SignalSETIssuer`).
enum SecurityEventToken {
    /// The claims, or nil when the SET is not for this receiver (profile claims it may not see).
    /// - Parameters:
    ///   - user: the user's subject identifier (RFC 9493) in the stream's format.
    ///   - profileClaims: the changed names' current values, when the receiver may see them.
    static func claims(
        _ row: SignalOutboxRow, stream: SignalStreamRow, user: JWTHeaderField?, profileClaims: [String: JWTHeaderField]? = nil
    ) -> SecurityEventClaims? {
        guard let event = SignalEvent(rawValue: row.event) else { return nil }
        var body = row.detail
        let subject: JWTHeaderField
        switch event {
        case .verification, .streamUpdated:
            // SSF 1.0 sections 8.1.4.1 and 8.1.5: the stream itself, as an opaque subject.
            subject = .object(["format": .string("opaque"), "id": .string(stream.streamID)])
        default:
            guard let user else { return nil }
            if let session = row.sessionID {
                // CAEP session-revoked of one session: the user and the session (RFC 9493 section 3.3).
                subject = .object([
                    "format": .string("complex"), "user": user,
                    "session": .object(["format": .string("opaque"), "id": .string(session.uuidString.lowercased())]),
                ])
            } else {
                subject = user
            }
        }
        switch event {
        case .sessionRevoked, .credentialChange, .tokenClaimsChange:
            body["event_timestamp"] = .int(Int(row.occurredAt.timeIntervalSince1970))
        default:
            break
        }
        if event == .credentialChange { credentialFields(&body) }
        if event == .tokenClaimsChange, case .array(let changed)? = body.removeValue(forKey: "changed") {
            guard let profileClaims else { return nil }
            var claims: [String: JWTHeaderField] = [:]
            for case .string(let name) in changed { claims[name] = profileClaims[name] ?? .null }
            body["claims"] = .object(claims)
        }
        return SecurityEventClaims(
            iss: stream.issuer, jti: row.jti, iat: Int(row.enqueuedAt.timeIntervalSince1970), aud: stream.clientID, txn: String(row.seq),
            subID: subject, events: [event.uri: .object(body)])
    }

    /// CAEP section 3.3: `credential_type` of a passkey (a synced one, backup-eligible, is a
    /// platform credential; else roaming) and `fido2_aaguid` as a GUID.
    private static func credentialFields(_ body: inout [String: JWTHeaderField]) {
        let backupEligible = body.removeValue(forKey: "backupEligible")
        let aaguid = body.removeValue(forKey: "aaguid")
        guard body["credential_type"] == nil else { return }
        body["credential_type"] = .string(backupEligible == .bool(true) ? "fido2-platform" : "fido2-roaming")
        if case .string(let encoded)? = aaguid, let guid = guid(base64URL: encoded) { body["fido2_aaguid"] = .string(guid) }
    }

    /// A 16-byte AAGUID (base64url) as `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`; nil for the
    /// all-zero AAGUID of authenticators that name no model (`PasskeyProviders.guid`).
    static func guid(base64URL: String) -> String? {
        PasskeyProviders.guid(aaguid: base64URL)
    }
}
