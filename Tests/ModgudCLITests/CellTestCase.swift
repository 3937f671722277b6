import PostgresTestSupport
import XCTest

/// A test of several cells: its databases, an own cluster where a test needs one, and the
/// `modgud serve` it launched, all ended after the test.
class CellTestCase: XCTestCase {
    var databases: [TestDatabase] = []
    var clusters: [RestartableDatabase] = []
    var server: CLIRunner.Launched?

    override func tearDown() async throws {
        if let server {
            server.process.terminate()
            _ = server.finish()
        }
        for database in databases { await database.drop() }
        for cluster in clusters { await cluster.destroy() }
    }
}
