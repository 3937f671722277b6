import Foundation
import ModgudDomain
import PQ

/// The one home of `device_authorizations`' SQL (migration 0030): the user code's keyed hash,
/// which a person's typed code finds, and the pacing of the device's polls (RFC 8628 section
/// 3.5).
enum DeviceAuthorizationsTable {
    /// The row of a new authorization, inserted in the append of its `requested` event.
    static func insert(_ requested: DeviceAuthorizationRequested, realm: String, device: DeviceAuthorizationService.Device, now: Date) -> PQQuery {
        """
        INSERT INTO device_authorizations
            (realm_id, authorization_id, user_code_hash, client_id, expires_at, interval_seconds, next_poll_at, device_name, network)
        VALUES (\(realm), \(requested.authorizationID), \(requested.userCodeHash), \(requested.clientID), \(requested.expiresAt),
            \(requested.interval), \(now), \(device.name), \(device.network))
        """
    }

    /// Whether an insert failed on a user code another authorization holds (a collision of
    /// two random codes: draw again).
    static func isUserCodeTaken(_ error: any Error) -> Bool {
        guard let failure = error as? PQError else { return false }
        return failure.sqlState == "23505" && failure.constraint == "device_authorizations_user_code"
    }

    /// The authorization a typed user code names while it lives, and what the device said of itself.
    static func authorization(realm: String, userCodeHash: String, now: Date, pool: PQPool) async throws
        -> (id: UUID, device: DeviceAuthorizationService.Device)?
    {
        try await pool.query(
            """
            SELECT authorization_id, device_name, network FROM device_authorizations
            WHERE realm_id = \(realm) AND user_code_hash = \(userCodeHash) AND expires_at > \(now)
            """
        ).rows.first.map {
            (try $0.decode(UUID.self, at: 0), DeviceAuthorizationService.Device(name: try $0.decode(String?.self, at: 1), network: try $0.decode(String?.self, at: 2)))
        }
    }

    /// What the device said of itself, by authorization.
    static func device(realm: String, authorizationID: UUID, pool: PQPool) async throws -> DeviceAuthorizationService.Device? {
        try await pool.query(
            "SELECT device_name, network FROM device_authorizations WHERE realm_id = \(realm) AND authorization_id = \(authorizationID)"
        ).rows.first.map { DeviceAuthorizationService.Device(name: try $0.decode(String?.self, at: 0), network: try $0.decode(String?.self, at: 1)) }
    }

    /// How a poll is paced.
    enum Pace: Sendable, Equatable {
        /// No such authorization for this client.
        case unknown
        /// On time: the next poll may come `interval` seconds from now.
        case onTime
        /// Too early (section 3.5 `slow_down`): the interval grew by 5 seconds, for this and
        /// every later poll.
        case slowDown(interval: Int)
    }

    /// Decides a poll in one statement: the row lock orders two instances' polls, so a device
    /// that polls twice at once is answered on time once and `slow_down` once.
    static func pace(realm: String, authorizationID: UUID, clientID: String, now: Date, pool: PQPool) async throws -> Pace {
        let row = try await pool.query(
            """
            WITH prior AS (
                SELECT next_poll_at > \(now) AS early FROM device_authorizations
                WHERE realm_id = \(realm) AND authorization_id = \(authorizationID) AND client_id = \(clientID) FOR UPDATE
            )
            UPDATE device_authorizations SET
                interval_seconds = interval_seconds + CASE WHEN prior.early THEN 5 ELSE 0 END,
                next_poll_at = \(now) + make_interval(secs => interval_seconds + CASE WHEN prior.early THEN 5 ELSE 0 END)
            FROM prior
            WHERE realm_id = \(realm) AND authorization_id = \(authorizationID)
            RETURNING prior.early, device_authorizations.interval_seconds
            """
        ).rows.first
        guard let row else { return .unknown }
        return try row.decode(Bool.self, at: 0) ? .slowDown(interval: try row.decode(Int.self, at: 1)) : .onTime
    }

    /// Deletes rows an hour past their expiry.
    static func prune(before cutoff: Date, pool: PQPool) async throws {
        _ = try await pool.query("DELETE FROM device_authorizations WHERE expires_at < \(cutoff.addingTimeInterval(-3600))")
    }
}
