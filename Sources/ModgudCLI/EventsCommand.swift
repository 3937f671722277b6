import ArgumentParser
import EventSourcing
import EventStorePostgres
import FoundationEssentials
import ModgudService

struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Read the event log, and prune its spent one-shot streams.",
        subcommands: [Replay.self, Prune.self])

    struct Prune: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete spent one-shot streams (passkey ceremonies, email challenges) older than the retention.",
            discussion: """
                A stream is pruned when its last event is older than --retention-days. Users, clients, realms, \
                passkeys and token families are never pruned. Client IPs in event metadata older than \
                --ip-retention-days become unreadable (their day keys are shredded). The maintenance loop of every \
                `modgud serve` does the same every 10 minutes with MODGUD_RETENTION_DAYS and MODGUD_IP_RETENTION_DAYS.
                """)

        @OptionGroup var database: DatabaseOptions
        @Option(help: "Keep one-shot streams written to within this many days.") var retentionDays = 30
        @Option(help: "Keep client IPs readable for this many days.") var ipRetentionDays = 30

        func validate() throws {
            if retentionDays < 1 { throw ValidationError("--retention-days must be at least 1") }
            if ipRetentionDays < 1 { throw ValidationError("--ip-retention-days must be at least 1") }
        }

        func run() async throws {
            let pool = database.makePool(maxConnections: 1)
            let report = try await LogRetention.oneShotStreams(pool: pool, maxAge: .seconds(retentionDays * 86_400)).prune()
            print("pruned \(report.streams) one-shot streams (\(report.events) events) older than \(retentionDays) days")
            let days = try await PersonalDataVault.shredAddresses(before: Date().addingTimeInterval(-Double(ipRetentionDays * 86_400)), pool: pool)
            print("made client IPs of \(days) day(s) older than \(ipRetentionDays) days unreadable")
            await pool.close()
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Stream the log as JSON lines on standard output, in log order.",
            discussion: """
                Each line: {"cursor","position","stream","streamType","realm","version","type","revision",\
                "recordedAt","metadata","payload"}. Pass a line's cursor to --after to continue from it.
                Events behind a still-open write transaction are not shown until it ends (the log is read gap-safely).
                Personal data is sealed per person: a field of an erased person reads "[erased]", a client IP past its
                retention "[expired]"; --open shows the others in plaintext (needs MODGUD_MASTER_KEY).
                """)

        @OptionGroup var database: DatabaseOptions
        @Option(help: "Only this stream id.") var stream: String?
        @Option(help: "Only this event type (repeatable).") var type: [String] = []
        @Option(help: "Only this realm.") var realm: String?
        @Option(help: "Start after this cursor (TRANSACTION:POSITION, from a previous line).") var after: String?
        @Option(help: "Stop after this many events.") var limit: Int?
        @Flag(help: "Show live personal data in plaintext (needs MODGUD_MASTER_KEY): a data subject's access request.") var open = false

        func validate() throws {
            if let after, LogCursor(after) == nil {
                throw ValidationError("--after must look like 1234:56 (transaction id:position)")
            }
            if let limit, limit < 1 { throw ValidationError("--limit must be at least 1") }
        }

        func run() async throws {
            let pool = database.makePool(maxConnections: 2)
            let store = PostgresEventStore(pool: pool)
            let masterKey = try ModgudConfiguration.fromEnvironment().masterKey
            if open, masterKey == nil { throw ValidationError("--open needs MODGUD_MASTER_KEY") }
            let renderer = SealedFieldRenderer(
                pool: pool, vault: try masterKey.map { try PersonalDataVault(pool: pool, masterKey: $0) }, opening: open)
            let filter = LogFilter(realm: realm, streamID: stream, types: type.isEmpty ? nil : Set(type))
            var cursor = after.flatMap(LogCursor.init) ?? .start
            var remaining = limit ?? Int.max
            while remaining > 0 {
                let batch = try await store.readAll(after: cursor, limit: min(1000, remaining), filter: filter)
                guard let last = batch.last else { break }
                var output = ""
                let texts = batch.map { (String(decoding: $0.envelope.payload, as: UTF8.self), $0.envelope.metadata.jsonText) }
                try await renderer.prefetch(texts.flatMap { [$0.0, $0.1] })
                for (event, (payload, metadata)) in zip(batch, texts) {
                    output += event.jsonLine(payload: try await renderer.render(payload), metadata: try await renderer.render(metadata)) + "\n"
                }
                print(output, terminator: "")
                cursor = last.cursor
                remaining -= batch.count
            }
            await pool.close()
        }
    }
}

extension RecordedEvent {
    /// One JSON object on one line, with the payload and metadata as given (rendered).
    func jsonLine(payload: String, metadata: String) -> String {
        let recorded = recordedAt.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        let envelope = self.envelope
        return "{\"cursor\":\"\(cursor)\",\"position\":\(position),\"stream\":\(JSONText.quote(envelope.stream.id)),"
            + "\"streamType\":\(JSONText.quote(envelope.stream.type)),\"realm\":\(JSONText.quote(envelope.stream.realm)),"
            + "\"version\":\(envelope.streamVersion),\"type\":\(JSONText.quote(envelope.type)),\"revision\":\(envelope.revision),"
            + "\"recordedAt\":\"\(recorded)\",\"metadata\":\(metadata),"
            + "\"payload\":\(payload)}"
    }
}
