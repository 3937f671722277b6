import EventStorePostgres
import Foundation
import PQ

/// What operators watch and nudge (issue 42): readiness, the projections and their rebuilds,
/// and the dead letters of the mail and SET outboxes. The console calls it, and so needs
/// neither the store's types nor its pool.
public struct OperationsService: Sendable {
    private let pool: PQPool
    private let probe: ReadinessProbe
    private let secrets: ServerSecrets?
    private let vault: PersonalDataVault?
    /// The rebuilds started on this instance (run by the server's lifecycle).
    public let rebuilds: RebuildRunner

    init(pool: PQPool, readiness: ReadinessProbe, rebuilds: RebuildRunner, secrets: ServerSecrets?, vault: PersonalDataVault?) {
        self.pool = pool
        probe = readiness
        self.secrets = secrets
        self.vault = vault
        self.rebuilds = rebuilds
    }

    /// One projection as operators see it.
    public struct ProjectionReport: Sendable, Equatable {
        public var name: String
        /// `inline` or `async`.
        public var mode: String
        /// Where an asynchronous projection stands: `inline`, `start`, or the log position.
        public var checkpoint: String
        public var applied: Int
        public var lag: Int
        public var failing: Int
        public var parked: Int
        /// A rebuild started on this instance, if any.
        public var rebuild: RebuildRunner.Progress?
    }

    public func readiness() async -> ReadinessProbe.Report {
        await probe.check()
    }

    /// Every projection of the catalog, in its order.
    public func projections() async throws -> [ProjectionReport] {
        var reports: [ProjectionReport] = []
        for projection in ProjectionCatalog.all {
            let status = try await ProjectionStatus.read(projection, pool: pool)
            reports.append(
                ProjectionReport(
                    name: status.name, mode: status.mode.rawValue,
                    checkpoint: status.mode == .inline ? "inline" : status.checkpoint?.description ?? "start", applied: status.applied,
                    lag: status.lag, failing: status.failing, parked: status.parked, rebuild: rebuilds.progress(status.name)))
        }
        return reports
    }

    /// Starts a rebuild of the named projection here.
    /// - Returns: nil for an unknown name; false when one of it runs here already.
    public func startRebuild(_ name: String) -> Bool? {
        guard let projection = ProjectionCatalog.named(name) else { return nil }
        return rebuilds.start(projection)
    }

    /// The mail outbox (it opens addresses: the master key is needed).
    public func mail() throws -> MailOutbox {
        guard let secrets else { throw MasterKeyMissing() }
        return MailOutbox(pool: pool, secrets: secrets, vault: vault)
    }

    /// The receivers' SET outboxes.
    public var signals: SignalOutbox {
        SignalOutbox(pool: pool)
    }
}
