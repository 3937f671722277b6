import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// Each user's last sign-in, for the console's "sort by last sign-in" (issue 43): the newest
/// auth time of the user's token families, and the client it came through. Asynchronous: a
/// sign-in never waits for it, and the console reads it a moment later. Its SQL lives in
/// `UserSignInsTable`.
public struct UserSignInsProjection: SQLProjection, AsyncProjection {
    public let name = "user_sign_ins"
    public let eventTypes: Set<String>? = [TokenFamilyStarted.eventType]
    public let tables = ["user_sign_ins"]

    public init() {}

    public func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        try statements(forBatch: [event], tables: tables)
    }

    /// One upsert per user in the batch, with the batch's newest sign-in of each (the
    /// upsert keeps the later of it and the stored one, so any order of batches agrees).
    public func statements(forBatch events: [EventEnvelope], tables: ProjectionTables) throws -> [PQQuery] {
        var newest: [UserKey: TokenFamilyStarted] = [:]
        for event in events where event.type == TokenFamilyStarted.eventType {
            guard case .started(let started) = try TokenFamilyEvent(decoding: event, registry: ModgudEvents.registry),
                let userID = started.userID
            else { continue }
            let key = UserKey(realm: event.stream.realm, userID: userID)
            if let known = newest[key], known.authTime >= started.authTime { continue }
            newest[key] = started
        }
        return newest.sorted { $0.key.userID.uuidString < $1.key.userID.uuidString }.map { key, started in
            UserSignInsTable.upsert(table: tables("user_sign_ins"), realm: key.realm, userID: key.userID, at: started.authTime, client: started.clientID)
        }
    }

    private struct UserKey: Hashable {
        var realm: String
        var userID: UUID
    }
}
