import ArgumentParser
import Crypto
import EmbeddedPostgres
import EventStorePostgres
import Foundation
import Glibc
import PQ
import TransparencyLog

/// `modgud bench auditlog`: what the tamper-evident audit log costs (issue 28): integration
/// and verification rates, proof latency, and the table sizes per million events.
struct AuditLogBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "auditlog",
        abstract: "Integrate and verify an audit log of N events; print rates, proof latency and sizes per million events.",
        discussion: """
            Without --database-url it starts a private, durable PostgreSQL cluster in a temporary folder and deletes it \
            afterwards. The events are \
            written by SQL in chunks of 100,000, with payloads and metadata the size of the product's (about 450 bytes). \
            Run the release build: swift run -c release modgud bench auditlog
            """)

    @Option(name: .customLong("database-url"), help: "Benchmark against this empty, migrated database instead.") var url: String?
    @Option(help: "Events in the log.") var events = 1_000_000
    @Option(help: "Inclusion proofs to time.") var proofs = 2000

    struct Signer: CheckpointSigning {
        let key = Curve25519.Signing.PrivateKey()
        func origin(realm: String) async throws -> String { "bench.modgud/\(realm)" }
        func sign(_ text: String, realm: String) async throws -> String { try SignedNote.sign(text, name: "bench.modgud/\(realm)", key: key) }
    }

    func run() async throws {
        var cluster: EmbeddedPostgres?
        if url == nil {
            cluster = try EmbeddedPostgres(.init(dataDirectory: "/tmp/modgud-bench-audit-\(getpid())", database: "bench", durable: true))
        }
        defer { try? cluster?.destroy() }
        let pool = PQPool(configuration: PQConfiguration(connectionString: url ?? cluster!.url), options: .init(maxConnections: 4))
        _ = try await Migrator.product(pool: pool).migrate()
        print("modgud bench auditlog — \(events) events in one realm, \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) cores")
        print("phase".padding(34) + "events/s".padding(12, left: true) + "seconds".padding(10, left: true))
        let clock = ContinuousClock()

        var started = clock.now
        for chunk in stride(from: 0, to: events, by: 100_000) {
            _ = try await pool.query(Self.fill(from: chunk, count: min(100_000, events - chunk)))
        }
        report("write the events (SQL)", count: events, since: started, clock: clock)

        let signer = Signer()
        let integrator = AuditLogIntegrator(pool: pool, signer: signer)
        started = clock.now
        while case .applied = try await integrator.step(AuditLogIntegrator.name) {}
        report("integrate (batches of 1000)", count: events, since: started, clock: clock)
        await integrator.shutdown()

        let verifier = AuditLogVerifier(pool: pool, origin: "bench.modgud/bench", publicKey: Array(signer.key.publicKey.rawRepresentation))
        started = clock.now
        let verified = try await verifier.verify(realm: "bench")
        report("verify (pages of 10,000)", count: Int(verified.leavesChecked), since: started, clock: clock)
        if let finding = verified.finding { throw CommandError("the benchmark log did not verify: \(finding)") }

        let reader = AuditLogReader(pool: pool)
        started = clock.now
        for _ in 0..<proofs {
            _ = try await reader.inclusionProof(realm: "bench", index: Int64.random(in: 0..<Int64(events)), size: Int64(events))
        }
        let perProof = (clock.now - started) / proofs
        print("inclusion proof at size \(events): \(String(format: "%.3f", Double(perProof.components.attoseconds) / 1e15 + Double(perProof.components.seconds) * 1000)) ms each")

        print("\nper million events:")
        for table in ["events", "audit_leaves", "audit_nodes", "audit_checkpoints"] {
            let bytes = try await pool.query("SELECT pg_total_relation_size(\(table)::regclass)").first!.decode(Int64.self, at: 0)
            print("  \(table.padding(20)) \(String(format: "%8.1f", Double(bytes) / Double(events) * 1e6 / 1_048_576)) MiB")
        }
        print("  (\(verified.checkpointsChecked) checkpoints, one per 10,000 leaves)")
        await pool.close()
    }

    private func report(_ phase: String, count: Int, since started: ContinuousClock.Instant, clock: ContinuousClock) {
        let elapsed = clock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print(phase.padding(34) + String(format: "%.0f", Double(count) / seconds).padding(12, left: true) + String(format: "%.1f", seconds).padding(10, left: true))
    }

    /// `count` events shaped like the product's: a sealed field, a few ids, and metadata with
    /// correlation, actor and a sealed client address.
    static func fill(from start: Int, count: Int) -> PQQuery {
        """
        INSERT INTO events (stream_id, stream_type, stream_version, realm, type, payload, metadata)
        SELECT 'user-' || md5((g / 8)::text), 'user', g % 8 + 1, 'bench', 'user.signed_in',
               jsonb_build_object('userID', md5(g::text), 'clientID', 'ios', 'method', 'otp', 'familyID', md5((g + 1)::text),
                                  'email', 'sealed:v1:' || encode(sha512(g::text::bytea), 'base64'), 'at', '2026-11-24T12:00:00Z'),
               jsonb_build_object('correlationID', md5((g + 2)::text), 'actor', 'user:' || md5(g::text),
                                  'clientIP', 'sealed:v1:' || encode(sha256(g::text::bytea), 'base64'))
        FROM generate_series(\(start), \(start + count - 1)) g
        """
    }
}
