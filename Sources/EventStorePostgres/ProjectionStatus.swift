#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import EventSourcing
import PQ

/// Where a projection stands, for `modgud projections status` and monitoring.
public struct ProjectionStatus: Sendable {
    public var name: String
    public var mode: ProjectionMode
    /// The checkpoint (async projections; inline ones are always current).
    public var checkpoint: LogCursor?
    /// Events applied since the checkpoint row was created (or since the last rebuild).
    public var applied: Int
    public var updatedAt: Date?
    /// Events in the log after the checkpoint: the projection's lag.
    public var lag: Int
    /// Of those, events held back because an older transaction is still open.
    public var heldBehindOpenTransaction: Int
    /// Events that failed and are being retried.
    public var failing: Int
    /// Events given up on and skipped.
    public var parked: Int

    /// Reads the status of `projection`.
    public static func read(_ projection: any SQLProjection, pool: PQPool) async throws -> ProjectionStatus {
        var status = ProjectionStatus(
            name: projection.name, mode: projection.mode, checkpoint: nil, applied: 0, updatedAt: nil, lag: 0,
            heldBehindOpenTransaction: 0, failing: 0, parked: 0)
        guard projection.mode == .async else { return status }
        if let row = try await pool.query(EventStoreSQL.checkpoint(projection.name)).first {
            status.checkpoint = try LogCursor(checkpointRow: row)
            status.applied = try row.decode(Int.self, at: 2)
            status.updatedAt = try row.decode(Date.self, at: 3)
        }
        if let row = try await pool.query(EventStoreSQL.lag(after: status.checkpoint ?? .start)).first {
            status.lag = try row.decode(Int.self, at: 0)
            status.heldBehindOpenTransaction = try row.decode(Int.self, at: 1)
        }
        for row in try await pool.query(EventStoreSQL.failures(projection.name)).rows {
            if try row.decode(Bool.self, at: 3) { status.parked += 1 } else { status.failing += 1 }
        }
        return status
    }

    /// How long the oldest admitted event that `projection` has not applied has waited, or
    /// nil when the projection is caught up. Cheap (one indexed row), for readiness checks.
    public static func oldestUnappliedAge(_ projection: any SQLProjection, pool: PQPool) async throws -> Duration? {
        guard projection.mode == .async, let row = try await pool.query(EventStoreSQL.oldestUnappliedAge(projection.name)).first else {
            return nil
        }
        return .milliseconds(Int64(try row.decode(Double.self, at: 0) * 1000))
    }
}
