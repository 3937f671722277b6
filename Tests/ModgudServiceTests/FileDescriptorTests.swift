import Foundation
import ModgudService
import PostgresTestSupport
import XCTest

/// A composition keeps no file descriptor open for itself: every test makes one (or several),
/// and whatever the test process holds open, the PostgreSQL clusters it starts inherit. Once
/// each composition opened its own URLSession for the identity providers, and a full test run
/// left embedded clusters too few descriptors to start ("System allows 20, we need at least
/// 58"); the provider session is now one per process.
final class FileDescriptorTests: XCTestCase {
    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }

    func testCompositionsOpenNoDescriptorsOfTheirOwn() async throws {
        let database = try await TestDatabase.create(maxConnections: 4)
        // The first composition may make the process-wide pieces (the provider session).
        let first = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 7, count: 32))
        _ = first.federation
        let before = Self.openDescriptors()
        var cores: [ModgudCore] = []
        for _ in 0..<20 { cores.append(try ModgudCore(pool: database.pool, masterKey: Array(repeating: 7, count: 32))) }
        let after = Self.openDescriptors()
        XCTAssertLessThan(after - before, 10, "20 compositions opened \(after - before) descriptors")
        cores.removeAll()
        await database.drop()
    }
}
