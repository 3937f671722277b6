import EventSourcing
import EventStorePostgres
import Logging
import PQ

/// Start-up against a database that may not be up yet (a compose file starting everything at
/// once, a failover in progress): wait and retry with backoff instead of exiting, so that only
/// SIGTERM/SIGINT ends the process. A refusal that retrying cannot fix (an edited migration,
/// a wrong password) still ends it, with the reason.
enum DatabaseStartup {
    /// Waits until the database answers, then applies the missing migrations.
    static func migrateWhenReachable(_ pool: PQPool, logger: Logger) async throws -> Migrator.Report {
        var backoff = RetryBackoff(initial: .milliseconds(250), maximum: .seconds(5))
        while true {
            do {
                return try await Migrator.product(pool: pool).migrate()
            } catch where PQError.meansDatabaseUnavailable(error) && !isPermanent(error) {
                let delay = backoff.nextDelay()
                logger.warning(
                    "database not reachable yet; retrying", metadata: ["error": "\(error)", "retry_in_s": "\(delay.components.seconds)"])
                try await Task.sleep(for: delay)
            }
        }
    }

    /// Authentication and unknown-database failures will not fix themselves.
    private static func isPermanent(_ error: any Error) -> Bool {
        guard let error = error as? PQError else { return false }
        let text = error.message.lowercased()
        return text.contains("password authentication failed") || text.contains("does not exist")
            || text.contains("no pg_hba.conf entry") || text.contains("invalid connection option")
    }
}
