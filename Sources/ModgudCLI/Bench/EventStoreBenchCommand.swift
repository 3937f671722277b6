import ArgumentParser
import EmbeddedPostgres
import EventSourcing
import EventStorePostgres
import Glibc
import PQ

/// `modgud bench eventstore`: append, read and rebuild rates with latency percentiles.
struct EventStoreBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "eventstore",
        abstract: "Measure single and batched appends, reading the log and rebuilding a projection.",
        discussion: """
            Without --database-url it starts a private, durable (fsync on) PostgreSQL cluster in a temporary
            folder and deletes it afterwards. Run the release build: swift run -c release modgud bench eventstore
            """)

    @Option(name: .customLong("database-url"), help: "Benchmark against this database (it gets benchmark streams).")
    var url: String?
    @Option(help: "Appends by the single writer.") var singleAppends = 5000
    @Option(help: "Concurrent writers.") var writers = 32
    @Option(help: "Appends in total by the concurrent writers.") var concurrentAppends = 40000
    @Option(help: "Events per batched append.") var batchEvents = 50
    @Option(help: "Batched appends in total.") var batches = 1000
    @Option(help: "Writers for batched appends.") var batchWriters = 4
    @Flag(help: "Skip the NOTIFY in appends (to measure its cost).") var noNotify = false

    func run() async throws {
        var cluster: EmbeddedPostgres?
        let target: String
        if let url {
            target = url
        } else {
            let folder = "/tmp/modgud-bench-\(getpid())"
            cluster = try EmbeddedPostgres(.init(dataDirectory: folder, database: "bench", durable: true))
            target = cluster!.url
        }
        defer { try? cluster?.destroy() }
        let pool = PQPool(configuration: PQConfiguration(connectionString: target), options: .init(maxConnections: max(writers, batchWriters) + 2))
        _ = try await Migrator.product(pool: pool).migrate()
        let store = PostgresEventStore(pool: pool, notifyMode: noNotify ? .off : .afterCommit)
        let run = "\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let settings = try await pool.query("SELECT current_setting('fsync'), current_setting('synchronous_commit'), version()").first!
        print("modgud bench eventstore — \(try settings.decode(String.self, at: 2).split(separator: ",").first ?? "")")
        print("fsync=\(try settings.decode(String.self, at: 0)) synchronous_commit=\(try settings.decode(String.self, at: 1)), \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) cores, NOTIFY \(noNotify ? "off" : "on")")
        print("")
        print("phase".padding(40) + "events/s".padding(12, left: true) + "p50 ms".padding(10, left: true) + "p99 ms".padding(10, left: true))

        // 1. Single-event appends, one writer.
        let single = try await measureAppends(store: store, writers: 1, total: singleAppends, eventsPerAppend: 1, prefix: "single-\(run)")
        single.print("append 1 event, 1 writer")
        // 2. Single-event appends, N writers.
        let concurrent = try await measureAppends(
            store: store, writers: writers, total: concurrentAppends, eventsPerAppend: 1, prefix: "many-\(run)")
        concurrent.print("append 1 event, \(writers) writers")
        // 3. Batched appends.
        let batchedOne = try await measureAppends(
            store: store, writers: 1, total: batches / 4, eventsPerAppend: batchEvents, prefix: "batch1-\(run)")
        batchedOne.print("append \(batchEvents) events, 1 writer")
        let batched = try await measureAppends(
            store: store, writers: batchWriters, total: batches, eventsPerAppend: batchEvents, prefix: "batch-\(run)")
        batched.print("append \(batchEvents) events, \(batchWriters) writers")
        // 4. Read the whole log.
        let read = try await measureReadAll(store: store)
        read.print("read all (batches of 1000)")
        // 5. Rebuild projections: one that folds a batch into a few statements, one with a statement per event.
        let folded = try await measureRebuild(LogStatisticsProjection(), pool: pool)
        folded.print("rebuild log_statistics (folds batches)")
        try await pool.query(StreamHeadsProjection.createTable)
        let perEvent = try await measureRebuild(StreamHeadsProjection(), pool: pool)
        perEvent.print("rebuild stream heads (1 upsert/event)")
        await pool.close()
    }

    private func measureAppends(store: PostgresEventStore, writers: Int, total: Int, eventsPerAppend: Int, prefix: String) async throws -> Measurement {
        let payload = try NewEvent(BenchEvent(value: 42, note: "benchmark event with a realistic small payload"))
        let events = Array(repeating: payload, count: eventsPerAppend)
        let perWriter = max(1, total / writers)
        let clock = ContinuousClock()
        let started = clock.now
        let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
            for writer in 0..<writers {
                group.addTask {
                    var own: [Duration] = []
                    own.reserveCapacity(perWriter)
                    let stream = StreamRef(type: "bench", key: "\(prefix)-\(writer)", realm: "bench")
                    for index in 0..<perWriter {
                        let start = clock.now
                        _ = try await store.append(
                            events, to: stream, expected: ExpectedVersion(current: Int64(index * eventsPerAppend)), metadata: .none)
                        own.append(clock.now - start)
                    }
                    return own
                }
            }
            return try await group.reduce(into: [Duration]()) { $0.append(contentsOf: $1) }
        }
        return Measurement(count: latencies.count * eventsPerAppend, elapsed: clock.now - started, latencies: latencies)
    }

    private func measureReadAll(store: PostgresEventStore) async throws -> Measurement {
        let clock = ContinuousClock()
        let started = clock.now
        var cursor = LogCursor.start
        var count = 0
        var latencies: [Duration] = []
        while true {
            let start = clock.now
            let batch = try await store.readAll(after: cursor, limit: 1000, filter: .all)
            latencies.append(clock.now - start)
            guard let last = batch.last else { break }
            count += batch.count
            cursor = last.cursor
        }
        return Measurement(count: count, elapsed: clock.now - started, latencies: latencies)
    }

    private func measureRebuild(_ projection: some SQLProjection, pool: PQPool) async throws -> Measurement {
        let clock = ContinuousClock()
        let started = clock.now
        let report = try await ProjectionRebuilder(pool: pool).rebuild(projection)
        return Measurement(count: report.events, elapsed: clock.now - started, latencies: [])
    }
}

/// A projection with one upsert per event: each stream's latest version.
private struct StreamHeadsProjection: SQLProjection, AsyncProjection {
    let name = "bench_stream_heads"
    let eventTypes: Set<String>? = nil
    let tables = ["bench_stream_heads"]

    static let createTable: PQQuery =
        "CREATE TABLE IF NOT EXISTS bench_stream_heads (stream_id text PRIMARY KEY, version bigint NOT NULL)"

    func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        [
            """
            INSERT INTO \(unescaped: tables("bench_stream_heads")) (stream_id, version) VALUES (\(event.stream.id), \(event.streamVersion))
            ON CONFLICT (stream_id) DO UPDATE SET version = EXCLUDED.version
            """
        ]
    }
}

private struct BenchEvent: DomainEvent {
    static let eventType = "bench.happened"
    var value: Int
    var note: String
}

/// Throughput and latency percentiles of one phase.
struct Measurement {
    var count: Int
    var elapsed: Duration
    var latencies: [Duration]

    var seconds: Double { Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18 }

    func percentile(_ p: Double) -> Double? {
        guard !latencies.isEmpty else { return nil }
        let sorted = latencies.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)
        let value = sorted[max(0, index)]
        return Double(value.components.seconds) * 1000 + Double(value.components.attoseconds) / 1e15
    }

    func print(_ label: String) {
        let rate = Int((Double(count) / seconds).rounded())
        let p50 = percentile(0.50).map { format($0) } ?? "-"
        let p99 = percentile(0.99).map { format($0) } ?? "-"
        Swift.print(label.padding(40) + "\(rate)".padding(12, left: true) + p50.padding(10, left: true) + p99.padding(10, left: true))
    }

    private func format(_ milliseconds: Double) -> String {
        let hundredths = Int((milliseconds * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}

extension String {
    func padding(_ width: Int, left: Bool = false) -> String {
        guard count < width else { return self }
        let pad = String(repeating: " ", count: width - count)
        return left ? pad + self : self + pad
    }
}
