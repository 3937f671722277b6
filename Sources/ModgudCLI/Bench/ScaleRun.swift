import EventSourcing
import EventStorePostgres
import Foundation
import ModgudService
import PQ

/// One `bench scale` run: the fill and the measurements at each size.
struct ScaleRun {
    let command: ScaleCommand
    let load: LoadCommand
    let environment: LoadEnvironment
    let fixtures: LoadFixtureSet

    var pool: PQPool { environment.pool }

    /// One line to standard output at once.
    static func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// The events in the log (every realm's).
    func eventCount() async throws -> Int {
        try await pool.query("SELECT count(*) FROM events").first?.decode(Int.self, at: 0) ?? 0
    }

    /// Grows the log to at least `target` events with the mix `ScaleCommand` describes.
    func fill(to target: Int) async throws {
        let started = ContinuousClock.now
        var count = try await eventCount()
        let history = fixtures.history
        var steps = 0
        while count < target {
            let sessions = try await fixtures.refreshTokens(command.step).map(\.token)
            // Many families to a transaction, as a busy server's group commit appends them.
            for chunk in stride(from: 0, to: sessions.count, by: 50) {
                let (_, appended) = try await history.age(
                    Array(sessions[chunk..<min(chunk + 50, sessions.count)]), realm: LoadFixtureSet.realmID, rotations: command.rotations,
                    metadata: fixtures.metadata)
                count += appended
            }
            if command.passkeyEvery > 0 { _ = try await fixtures.passkeys(max(1, command.step / command.passkeyEvery)) }
            steps += 1
            if steps % 10 == 0 { count = try await eventCount() }
        }
        count = try await eventCount()
        Self.emit("filled to \(count) events in \(Self.seconds(since: started)) s")
        let integrating = ContinuousClock.now
        let reader = AuditLogReader(pool: pool)
        while try await reader.lag() > 0 { try await Task.sleep(for: .milliseconds(500)) }
        Self.emit("audit log integrated \(Self.seconds(since: integrating)) s after the fill")
    }

    /// The refresh measurement, the rebuilds, the verification and the sizes, at the log's size now.
    func measure(label: String) async throws {
        let events = try await eventCount()
        Self.emit("")
        Self.emit("== \(label): \(events) events")
        Self.emit(LoadReport.header)
        let report = try await load.measure(.refresh, fixtures: fixtures, environment: environment)
        Self.emit(report.line)
        if !command.noRebuild {
            for projection in ProjectionCatalog.all {
                do {
                    let result = try await ProjectionRebuilder(pool: pool).rebuild(projection) { _ in }
                    Self.emit("rebuilt \(projection.name): \(result.events) events in \(String(format: "%.2f", result.seconds)) s")
                } catch {
                    Self.emit("rebuild of \(projection.name) refused: \(error)")
                }
            }
        }
        try await verifyAuditLog()
        for line in try await sizes() { Self.emit(line) }
        if let memory = environment.server?.memory {
            Self.emit("server RSS \(memory.resident / 1024) MiB, peak \(memory.peak / 1024) MiB")
        }
    }

    /// `modgud audit verify` of the bench realm, timed.
    private func verifyAuditLog() async throws {
        let started = ContinuousClock.now
        let key = try await fixtures.admin.audit.signingKey(realm: LoadFixtureSet.realmID)
        // Without a signed checkpoint yet there is no key to check one with, and none to check.
        let verifier = AuditLogVerifier(pool: pool, origin: key?.0 ?? LoadFixtureSet.realmID, publicKey: key?.1 ?? [])
        let report = try await verifier.verify(realm: LoadFixtureSet.realmID)
        let verdict = report.finding.map { "FAILED at \($0)" } ?? "OK"
        Self.emit(
            "audit verify: \(report.leavesChecked) leaves, \(report.checkpointsChecked) checkpoints in \(Self.seconds(since: started)) s: \(verdict)")
    }

    /// The largest tables: rows (estimated by a fresh ANALYZE), heap and index sizes.
    private func sizes() async throws -> [String] {
        _ = try await pool.query("ANALYZE")
        let rows = try await pool.query(
            """
            SELECT c.relname, c.reltuples::bigint, pg_table_size(c.oid), pg_indexes_size(c.oid)
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relkind = 'r' AND n.nspname = 'public'
            ORDER BY pg_total_relation_size(c.oid) DESC LIMIT 10
            """)
        var lines = ["table".padding(28) + "rows".padding(12, left: true) + "heap MiB".padding(10, left: true) + "index MiB".padding(11, left: true)]
        for row in rows.rows {
            let (name, tuples) = (try row.decode(String.self, at: 0), try row.decode(Int64.self, at: 1))
            let (heap, index) = (try row.decode(Int64.self, at: 2), try row.decode(Int64.self, at: 3))
            lines.append(
                name.padding(28) + String(max(tuples, 0)).padding(12, left: true) + String(format: "%.1f", Double(heap) / 1_048_576).padding(10, left: true)
                    + String(format: "%.1f", Double(index) / 1_048_576).padding(11, left: true))
        }
        return lines
    }

    static func seconds(since start: ContinuousClock.Instant) -> String {
        String(format: "%.1f", (ContinuousClock.now - start).seconds)
    }
}
