import EventSourcing
import EventStorePostgres
import ModgudDomain
import PQ

/// Passkeys by credential-id hash and by user (inline: the passkey grant looks credentials up
/// by hash, and the list must be current the moment enrollment or deletion answers). Its SQL
/// lives in `PasskeysTable`.
public struct PasskeyDirectoryProjection: SQLProjection, InlineProjection {
    public let name = "passkey_directory"
    public let eventTypes: Set<String>? = [
        PasskeyEnrolled.eventType, PasskeyUsed.eventType, PasskeyDeleted.eventType, PasskeyRenamed.eventType,
    ]
    public let tables = ["passkeys"]

    public init() {}

    public func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        let realm = event.stream.realm
        guard let passkeyID = StreamNames.uuid(of: event.stream) else { return [] }
        let table = tables("passkeys")
        switch try PasskeyEvent(decoding: event, registry: ModgudEvents.registry) {
        case .enrolled(let enrolled):
            guard let rawID = Base64URLText.decode(enrolled.credentialID) else { return [] }
            return [
                PasskeysTable.insert(
                    table: table, passkeyID: passkeyID, realm: realm, enrolled: enrolled, credentialHash: PasskeysTable.credentialHash(rawID))
            ]
        case .used(let used):
            return [PasskeysTable.markUsed(table: table, passkeyID: passkeyID, at: used.usedAt)]
        case .deleted:
            return [PasskeysTable.delete(table: table, passkeyID: passkeyID)]
        case .renamed(let renamed):
            return [PasskeysTable.rename(table: table, passkeyID: passkeyID, to: renamed.displayName)]
        case .cloneSuspected, .assertionFailed:
            return []
        }
    }
}
