import EventSourcing
import EventStorePostgres
import ModgudDomain
import PQ

/// Token families, access tokens and refresh tokens by hash (inline: every request
/// authenticated by a token reads them the moment after issuance). Its SQL lives in `TokenTables`.
public struct TokenProjection: SQLProjection, InlineProjection {
    public let name = "tokens"
    public let eventTypes: Set<String>? = [TokenFamilyStarted.eventType, TokenFamilyRefreshed.eventType, TokenFamilyRevoked.eventType]
    public let tables = ["token_families", "access_tokens", "refresh_tokens"]
    /// Issued tokens are only inserted (a family's revocation updates `token_families`; pruning
    /// deletes from the live tables, never from a rebuild's copies).
    public let insertOnlyTables: Set<String> = ["access_tokens", "refresh_tokens"]

    public init() {}

    public func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        let realm = event.stream.realm
        guard let familyID = StreamNames.uuid(of: event.stream) else { return [] }
        switch try TokenFamilyEvent(decoding: event, registry: ModgudEvents.registry) {
        case .started(let started):
            return TokenTables.startFamily(started, family: familyID, realm: realm, tables: tables)
        case .refreshed(let refreshed):
            return TokenTables.refreshFamily(refreshed, family: familyID, realm: realm, tables: tables)
        case .revoked(let revoked):
            return TokenTables.revokeFamily(revoked, family: familyID, tables: tables)
        case .refreshRefused:
            return []  // not among `eventTypes`: the log's record of a refusal changes no token
        }
    }

    /// One event (an append) keeps its per-row statements; a batch (a rebuild, the catch-up of
    /// a swap) folds into a few set-based statements per run of events (`TokenTables.Batch`).
    public func statements(forBatch events: [EventEnvelope], tables: ProjectionTables) throws -> [PQQuery] {
        guard events.count > 1 else { return try events.flatMap { try statements(for: $0, tables: tables) } }
        var folded: [PQQuery] = []
        var batch = TokenTables.Batch()
        for event in events {
            guard let familyID = StreamNames.uuid(of: event.stream) else { continue }
            if !batch.accepts(family: familyID) {
                folded += batch.statements(tables: tables)
                batch = TokenTables.Batch()
            }
            switch try TokenFamilyEvent(decoding: event, registry: ModgudEvents.registry) {
            case .started(let started): batch.add(started, family: familyID, realm: event.stream.realm)
            case .refreshed(let refreshed): batch.add(refreshed, family: familyID, realm: event.stream.realm)
            case .revoked(let revoked): batch.add(revoked, family: familyID)
            case .refreshRefused: continue
            }
        }
        return folded + batch.statements(tables: tables)
    }
}
