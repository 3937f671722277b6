import EmbeddedPostgres
import Foundation
import PQ
import XCTest

final class EmbeddedPostgresTests: XCTestCase {
    func testClusterStartsReusesAndKeepsDataAcrossRestarts() async throws {
        let folder = "/tmp/modgud-embedded-test-\(getpid())"
        defer { _ = try? EmbeddedPostgres(.init(dataDirectory: folder, durable: false)).destroy() }

        let first = try EmbeddedPostgres(.init(dataDirectory: folder, database: "app", durable: false))
        XCTAssertTrue(first.url.hasPrefix("postgresql://postgres@127.0.0.1:"))
        let connection = try await PQConnection.connect(PQConfiguration(connectionString: first.url))
        try await connection.query("CREATE TABLE kept (value text)")
        try await connection.query("INSERT INTO kept VALUES ('still here')")
        await connection.close()

        // A second start on the same folder finds the running server instead of starting another.
        let again = try EmbeddedPostgres(.init(dataDirectory: folder, database: "app", durable: false))
        XCTAssertEqual(again.port, first.port)

        try first.stop()
        let restarted = try EmbeddedPostgres(.init(dataDirectory: folder, database: "app", durable: false))
        let reconnected = try await PQConnection.connect(PQConfiguration(connectionString: restarted.url))
        let value = try await reconnected.query("SELECT value FROM kept").first!.decode(String.self, at: 0)
        XCTAssertEqual(value, "still here")
        await reconnected.close()
        try restarted.destroy()
        XCTAssertEqual(access(folder, F_OK), -1, "destroy removes the folder")
    }

    func testMissingBinariesMessageNamesThePackageToInstall() {
        let message = EmbeddedPostgresError.binariesMissing(searched: ["/nowhere"]).description
        XCTAssertTrue(message.contains("apt-get install -y postgresql"), message)
        XCTAssertTrue(message.contains("brew install"), message)
        XCTAssertTrue(message.contains("MODGUD_DATABASE_URL"), message)
    }

    func testBogusConfiguredBinaryFolderFallsBackToTheMachinesBinaries() throws {
        setenv("MODGUD_PG_BINDIR", "/nonexistent-pg-bin", 1)
        defer { unsetenv("MODGUD_PG_BINDIR") }
        // The machine's own binaries are still found after the configured folder is rejected,
        // so startup succeeds; what matters is that the bogus folder does not break it.
        let folder = "/tmp/modgud-embedded-bindir-\(getpid())"
        let cluster = try EmbeddedPostgres(.init(dataDirectory: folder, durable: false))
        XCTAssertNotEqual(cluster.binDirectory, "/nonexistent-pg-bin")
        try cluster.destroy()
    }

    /// Issue 10: a checkout in root's 0700 home folder. initdb runs as `postgres`, which cannot
    /// traverse the private parent, so the cluster moves to a folder it can reach, and the
    /// same request finds the same cluster again.
    func testAFolderThePostgresUserCannotReachGetsTheClusterRelocatedAndReused() async throws {
        let home = "/tmp/modgud-private-home-\(getpid())"
        XCTAssertEqual(mkdir(home, 0o700), 0)
        chmod(home, 0o700)
        defer { _ = try? ProcessRunnerForTests.remove(home) }
        let requested = home + "/checkout/.modgud/dev/postgres"
        let cluster = try EmbeddedPostgres(.init(dataDirectory: requested, database: "app", durable: false))
        defer { try? cluster.destroy() }
        if geteuid() == 0 {
            XCTAssertTrue(cluster.relocated)
            XCTAssertTrue(cluster.dataDirectory.hasPrefix(EmbeddedPostgres.fallbackRoot + "/"), cluster.dataDirectory)
        } else {
            // Not root: the server runs as this user, who can reach its own folder.
            XCTAssertFalse(cluster.relocated)
        }
        let connection = try await PQConnection.connect(PQConfiguration(connectionString: cluster.url))
        try await connection.query("CREATE TABLE kept (value text)")
        await connection.close()
        try cluster.stop()
        let again = try EmbeddedPostgres(.init(dataDirectory: requested, database: "app", durable: false))
        XCTAssertEqual(again.dataDirectory, cluster.dataDirectory, "the same request finds the same cluster")
        let reconnected = try await PQConnection.connect(PQConfiguration(connectionString: again.url))
        let tables = try await reconnected.query("SELECT count(*) FROM pg_tables WHERE tablename = 'kept'").first!.decode(Int.self, at: 0)
        XCTAssertEqual(tables, 1)
        await reconnected.close()
    }
}

/// Removes a folder tree (test cleanup).
enum ProcessRunnerForTests {
    static func remove(_ path: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/rm")
        process.arguments = ["-rf", path]
        try process.run()
        process.waitUntilExit()
    }
}
