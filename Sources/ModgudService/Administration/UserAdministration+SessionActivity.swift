import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain

/// What an operator sees of a session besides its client and scopes (issue 43): the device,
/// where it was used from, when last, and until when it lasts. Read from the family's own
/// events (their metadata carries the address, sealed, and the user agent), so recording
/// it costs the refresh nothing beyond the metadata it writes anyway.
public struct SessionActivity: Sendable, Equatable {
    /// The address of the sign-in and of the latest rotation, opened while their day keys
    /// live (`[erased]` for an erased person, nil when none was recorded).
    public var firstAddress: String?
    public var lastAddress: String?
    /// The user agent of the sign-in and of the latest rotation.
    public var firstUserAgent: String?
    public var lastUserAgent: String?
    /// The sign-in or the latest rotation.
    public var lastUsedAt: Date
    /// When the current refresh token stops working: its lifetime from the latest rotation,
    /// capped by the session's absolute lifetime; nil when the realm has no settings.
    public var expiresAt: Date?
}

extension UserAdministration {
    /// The activity of some of a user's sessions (token families), by family id.
    public func sessionActivity(realm: String, userID: UUID, families: [UUID]) async throws -> [UUID: SessionActivity] {
        try await ServiceRefusal.translating {
            guard !families.isEmpty else { return [:] }
            let streams = Dictionary(uniqueKeysWithValues: families.map { (StreamNames.tokenFamily(realm: realm, familyID: $0).id, $0) })
            let events = try await EventLogMaintenance(pool: pool).events(realm: realm, streams: Array(streams.keys))
            let settings = try await realms.actor(for: StreamNames.realm(realm)).current().state.settings
            let erased = try await state(realm: realm, id: userID).status == .erased
            var activity: [UUID: SessionActivity] = [:]
            var startedAt: [UUID: Date] = [:]
            for event in events where event.type == TokenFamilyStarted.eventType || event.type == TokenFamilyRefreshed.eventType {
                guard let family = streams[event.streamID] else { continue }
                let metadata = AuditQueries.fields(event.metadata)
                let address = erased ? metadata["clientIP"].map { _ in SealedFieldRenderer.erased } : try await vault.openForTheDay(metadata["clientIP"])
                let agent = erased ? nil : try await vault.openForTheDay(metadata["userAgent"])
                if var known = activity[family] {
                    (known.lastAddress, known.lastUserAgent, known.lastUsedAt) = (address, agent, event.recordedAt)
                    activity[family] = known
                } else {
                    startedAt[family] = event.recordedAt
                    activity[family] = SessionActivity(
                        firstAddress: address, lastAddress: address, firstUserAgent: agent, lastUserAgent: agent, lastUsedAt: event.recordedAt)
                }
            }
            guard let settings else { return activity }
            for (family, started) in startedAt {
                let refreshEnds = activity[family]!.lastUsedAt.addingTimeInterval(TimeInterval(settings.nativeGrants.refreshTokenLifetimeDays * 86_400))
                let absoluteEnds = started.addingTimeInterval(TimeInterval(settings.sessionLimits.absoluteLifetimeDays * 86_400))
                activity[family]?.expiresAt = min(refreshEnds, absoluteEnds)
            }
            return activity
        }
    }
}
