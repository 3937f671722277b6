@testable import ModgudCLI
import XCTest

/// Issue 49: what `ModgudMain` sets up before any task starts.
final class ProcessSetupTests: XCTestCase {
    func testArenasAreOnePerCoreAndAtLeastTwo() {
        XCTAssertEqual(MallocArenas.limit(cores: 1), 2)
        XCTAssertEqual(MallocArenas.limit(cores: 2), 2)
        XCTAssertEqual(MallocArenas.limit(cores: 16), 16)
    }

    func testGlibcsOwnSettingWins() {
        XCTAssertNil(MallocArenas.apply(environment: ["MALLOC_ARENA_MAX": "8"], cores: 2), "the operator's MALLOC_ARENA_MAX is left alone")
        #if canImport(Glibc)
        XCTAssertEqual(MallocArenas.apply(environment: [:], cores: 2), 2)
        #endif
    }

    func testTheExecutorStaysSwiftsPoolUnlessAskedFor() {
        // This test process never asked: its tasks run on Swift's pool. (`LoginCommandTests`
        // runs a server with `MODGUD_GLOBAL_EXECUTOR=nio` and reads that it took NIO's loops.)
        GlobalExecutor.install(environment: ["MODGUD_GLOBAL_EXECUTOR": "cooperative"])
        XCTAssertFalse(GlobalExecutor.isNIO)
    }
}
