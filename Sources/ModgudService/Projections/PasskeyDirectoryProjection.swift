import Crypto
import EventSourcing
import EventStorePostgres
import ModgudDomain
import PQ

/// Passkeys by credential-id hash and by user (inline: the passkey grant looks credentials up
/// by hash, and the list must be current the moment enrollment or deletion answers).
public struct PasskeyDirectoryProjection: SQLProjection, InlineProjection {
    public let name = "passkey_directory"
    public let eventTypes: Set<String>? = [
        PasskeyEnrolled.eventType, PasskeyUsed.eventType, PasskeyDeleted.eventType, PasskeyRenamed.eventType,
    ]
    public let tables = ["passkeys"]

    public init() {}

    /// The lookup key of a raw credential id: SHA-256, base64url.
    public static func credentialHash(_ rawID: [UInt8]) -> String {
        Base64URLText.encode(Array(SHA256.hash(data: rawID)))
    }

    public func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        let realm = event.stream.realm
        guard let passkeyID = StreamNames.uuid(of: event.stream) else { return [] }
        let table = tables("passkeys")
        switch try PasskeyEvent(decoding: event, registry: ModgudEvents.registry) {
        case .enrolled(let enrolled):
            guard let rawID = Base64URLText.decode(enrolled.credentialID) else { return [] }
            return [
                """
                INSERT INTO \(unescaped: table)
                    (passkey_id, realm_id, user_id, credential_id, credential_hash, rp_id, display_name, created_at, aaguid)
                VALUES (\(passkeyID), \(realm), \(enrolled.userID), \(enrolled.credentialID), \(Self.credentialHash(rawID)), \(enrolled.rpID),
                        \(enrolled.displayName.stored), \(enrolled.createdAt), \(enrolled.aaguid))
                """
            ]
        case .used(let used):
            return ["UPDATE \(unescaped: table) SET last_used_at = \(used.usedAt) WHERE passkey_id = \(passkeyID)"]
        case .deleted:
            return ["DELETE FROM \(unescaped: table) WHERE passkey_id = \(passkeyID)"]
        case .renamed(let renamed):
            return ["UPDATE \(unescaped: table) SET display_name = \(renamed.displayName.stored) WHERE passkey_id = \(passkeyID)"]
        case .cloneSuspected:
            return []
        }
    }
}
