import AsyncTestSupport
import Foundation
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

/// Issue 40, item 3: a DPoP proof id accepted before the database crashed is refused after
/// crash recovery (RFC 9449 section 11.1). An UNLOGGED table is emptied by crash recovery
/// and missing on a promoted standby; `dpop_jtis` is logged since migration 0017.
final class DPoPReplayDurabilityTests: XCTestCase {
    func testAProofIdAcceptedBeforeACrashIsRefusedAfterIt() async throws {
        let database = try await RestartableDatabase(maxConnections: 2, durable: true)
        do {
            let persistence = try await database.pool.query("SELECT relpersistence::text FROM pg_class WHERE relname = 'dpop_jtis'").first?
                .decode(String.self, at: 0)
            XCTAssertEqual(persistence, "p", "dpop_jtis is a logged table")
            let now = Date()
            let claim = DPoPReplayTable.claim(jkt: "thumbprint", jti: "proof-1", now: now, until: now.addingTimeInterval(600))
            let first = try await database.pool.query(claim)
            XCTAssertEqual(first.count, 1, "a new jti is accepted")
            let replay = try await database.pool.query(claim)
            XCTAssertEqual(replay.count, 0, "its replay is refused")

            try database.crash()
            try database.start()
            // The pool's connections died with the server: the next query may meet one of them.
            let afterCrash = try await Eventually.value("the database answers after crash recovery", every: .milliseconds(100)) {
                try? await database.pool.query(claim)
            }
            XCTAssertEqual(afterCrash.count, 0, "the jti accepted before the crash is still spent")
            let other = try await database.pool.query(
                DPoPReplayTable.claim(jkt: "thumbprint", jti: "proof-2", now: now, until: now.addingTimeInterval(600)))
            XCTAssertEqual(other.count, 1, "a new jti is still accepted")
        } catch {
            await database.destroy()
            throw error
        }
        await database.destroy()
    }
}
