import Foundation
import XCTest

/// One home per table (issue 23, docs/architecture.md "House habits"): SQL text lives in
/// `ModgudService/Tables/` (one file per read model or side table) and in the event store,
/// and each table is named in SQL only by its home and the homes that join it.
final class SQLHomeTests: XCTestCase {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    /// Places SQL may be written, besides `ModgudService/Tables/`, and why.
    static let otherPlaces = [
        "EventStorePostgres/",  // the event store: streams, events, checkpoints, migrations
        "PQ/",  // the client itself (LISTEN, pipeline tests of its own)
        "PostgresTestSupport/",  // test databases
        "EmbeddedPostgres/",  // the embedded cluster
        "ModgudCLI/Bench/",  // benchmarks: server statistics and their own scratch tables
        "ModgudService/SettingsChangeListener.swift",  // the settings channel's NOTIFY
    ]

    /// Every Swift source file, relative to `Sources/`, with its text minus comment lines.
    static func files() throws -> [(path: String, code: String)] {
        let enumerator = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)!
        var files: [(String, String)] = []
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            let path = String(url.path.dropFirst(sources.path.count + 1))
            let code = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }.joined(separator: "\n")
            files.append((path, code))
        }
        XCTAssertGreaterThan(files.count, 100, "the source tree was not found at \(sources.path)")
        return files
    }

    func testSQLTextLivesOnlyInItsHomes() throws {
        let statement = try NSRegularExpression(pattern: #"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM)\b"#)
        var strays: [String] = []
        for (path, code) in try Self.files() where !path.hasPrefix("ModgudService/Tables/") && !Self.otherPlaces.contains(where: path.hasPrefix) {
            if statement.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)) != nil { strays.append(path) }
        }
        XCTAssertEqual(strays, [], "SQL outside its table's home (docs/architecture.md)")
    }

    /// Issue 42: the log's gap-safe horizon has one home, the event store; no reader of
    /// `events` outside it keeps a copy of it.
    func testTheLogsHorizonIsReadOnlyByTheEventStore() throws {
        let readers = try Self.files().filter { $0.code.contains("pg_snapshot_xmin") }.map(\.path)
        XCTAssertEqual(Set(readers.filter { !$0.hasPrefix("EventStorePostgres/") }), [], "a copy of the horizon outside the event store")
        XCTAssertFalse(readers.isEmpty, "the check is looking at the wrong text")
    }

    func testEachTableIsNamedOnlyByItsHomeAndTheHomesThatJoinIt() throws {
        let tables = "ModgudService/Tables/"
        let homes: [String: Set<String>] = [
            "users": ["UsersTable.swift", "TokenTables.swift", "SubjectKeysTable.swift", "ConsoleSessionsTable.swift"],
            "passkeys": ["PasskeysTable.swift"],
            "token_families": ["TokenTables.swift", "TokenTables+Pruning.swift", "ConsoleSessionsTable.swift"],
            "console_sessions": ["ConsoleSessionsTable.swift"],
            "access_tokens": ["TokenTables.swift", "TokenTables+Pruning.swift"],
            "refresh_tokens": ["TokenTables.swift", "TokenTables+Pruning.swift"],
            "subject_keys": ["SubjectKeysTable.swift"],
            "erased_subjects": ["SubjectKeysTable.swift"],
            "rate_limits": ["RateLimitsTable.swift"],
            "rate_limits_durable": ["RateLimitsTable.swift"],
            "mail_outbox": ["MailOutboxTable.swift"],
            "clients": ["ClientsTable.swift", "TokenTables.swift"],
            // The live move (issue 71) copies and retires every table of a realm by name lists;
            // it names only the ones it reads in a way of their own.
            "realms": ["RealmTables.swift", "RealmMoveSQL.swift"],
            "realm_hosts": ["RealmTables.swift"],
            "signing_keys": ["RealmTables.swift"],
            "signing_key_secrets": ["RealmTables.swift"],
            "personal_data_sealing": ["PersonalDataSealingTable.swift"],
            "audit_log_keys": ["AuditLogKeysTable.swift"],
            "dpop_jtis": ["DPoPReplayTable.swift", "RealmMoveSQL.swift"],
            "settings_instances": ["SettingsAcknowledgementsTable.swift"],
            // The lease looks at a stream's first waiting SET, the overview counts them; the
            // fan-out and the drop pick the streams that hold them (issue 42).
            "ssf_streams": ["SignalStreamsTable.swift", "SignalOutboxTable.swift", "RealmMoveSQL.swift"],
            "ssf_outbox": ["SignalOutboxTable.swift", "SignalStreamsTable.swift"],
        ]
        let files = try Self.files().filter { !$0.path.hasPrefix("ModgudCLI/Bench/") }
        for (table, allowed) in homes {
            let named = try NSRegularExpression(pattern: #"\b(FROM|JOIN|INTO|UPDATE)\s+"# + table + #"\b"#)
            let users = Set(
                files.filter { named.firstMatch(in: $0.code, range: NSRange($0.code.startIndex..., in: $0.code)) != nil }.map(\.path))
            XCTAssertFalse(users.isEmpty, "\(table) is named nowhere: the check is looking at the wrong text")
            XCTAssertEqual(users.subtracting(allowed.map { tables + $0 }), [], "\(table) named in SQL outside its home")
        }
    }
}
