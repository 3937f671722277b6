import ArgumentParser
import EventStorePostgres

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Apply the schema migrations that have not run yet (idempotent, forward-only).")

    @OptionGroup var database: DatabaseOptions

    func run() async throws {
        let pool = database.makePool(maxConnections: 1)
        defer { Task { await pool.close() } }
        let report = try await Migrator.product(pool: pool).migrate()
        for name in report.applied { print("applied  \(name)") }
        print("\(report.applied.count) applied, \(report.alreadyApplied.count) already applied")
        if !report.unknown.isEmpty {
            print("warning: the database has migrations this binary does not know: \(report.unknown.joined(separator: ", "))")
        }
        await pool.close()
    }
}
