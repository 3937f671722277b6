import EventSourcing
import EventStorePostgres
import Foundation
import ModgudSchema
import PQ
import Synchronization

/// Whether this instance should receive traffic (`GET /health/ready`), for load balancers.
///
/// Ready means: not draining, the database answers, every migration this binary knows is
/// applied, and no asynchronous projection is stalled, that is, no event admitted to the log
/// longer ago than `stallAfter` is still waiting for a projection. Parked events do not make
/// an instance unready (the projection carries on past them; `/metrics` counts them).
///
/// One check costs one round trip per projection plus one; the answer is reused for
/// `cacheFor`, so frequent health checks from several balancers do not load the database.
public final class ReadinessProbe: Sendable {
    /// The outcome of one check.
    public struct Report: Sendable, Equatable {
        public var ready: Bool
        /// `draining`, `database`, `migrations`, `projections`: "ok" or what is wrong.
        public var checks: [String: String]
    }

    public let expectedMigrations: [String]
    public let projections: [any SQLProjection]
    public let stallAfter: Duration
    public let cacheFor: Duration
    private let pool: PQPool
    private let draining = Atomic<Bool>(false)
    private let cached = Mutex<(at: ContinuousClock.Instant, report: Report)?>(nil)

    public init(
        pool: PQPool, expectedMigrations: [String] = ModgudSchema.migrations.map(\.name),
        projections: [any SQLProjection] = ProjectionCatalog.asynchronous, stallAfter: Duration = .seconds(60),
        cacheFor: Duration = .seconds(1)
    ) {
        self.pool = pool
        self.expectedMigrations = expectedMigrations
        self.projections = projections
        self.stallAfter = stallAfter
        self.cacheFor = cacheFor
    }

    /// From now on the instance reports itself not ready (SIGTERM: let the balancer move away
    /// before the server stops accepting).
    public func beginDrain() {
        draining.store(true, ordering: .releasing)
    }

    public var isDraining: Bool { draining.load(ordering: .acquiring) }

    /// Checks (or reuses an answer younger than `cacheFor`).
    public func check() async -> Report {
        if isDraining { return Report(ready: false, checks: ["draining": "draining"]) }
        let now = ContinuousClock.now
        if let cached = cached.withLock({ $0 }), now - cached.at < cacheFor { return cached.report }
        let report = await measure()
        self.cached.withLock { $0 = (now, report) }
        return report
    }

    private func measure() async -> Report {
        var checks = ["draining": "ok"]
        do {
            let applied = try await Migrator.appliedNames(pool: pool)
            checks["database"] = "ok"
            let missing = expectedMigrations.filter { !applied.contains($0) }
            checks["migrations"] = missing.isEmpty ? "ok" : "pending: " + missing.joined(separator: ", ")
            var stalled: [String] = []
            for projection in projections where try await isStalled(projection) { stalled.append(projection.name) }
            checks["projections"] = stalled.isEmpty ? "ok" : "stalled: " + stalled.joined(separator: ", ")
        } catch {
            checks["database"] = PQError.meansDatabaseUnavailable(error) ? "unreachable" : "error"
        }
        return Report(ready: checks.values.allSatisfy { $0 == "ok" }, checks: checks)
    }

    /// The oldest event the projection has not applied was admitted more than `stallAfter` ago.
    private func isStalled(_ projection: any SQLProjection) async throws -> Bool {
        guard let age = try await ProjectionStatus.oldestUnappliedAge(projection, pool: pool) else { return false }
        return age > stallAfter
    }
}
