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
}
