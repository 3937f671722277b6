import AsyncTestSupport
@testable import ModgudService
import PQ
import PostgresTestSupport
import Synchronization
import XCTest

/// Issue 71: where `CellMap.route` sends a request, given which cells know its host's realm.
final class CellMapTests: XCTestCase {
    let map = CellMap(
        cells: [.init(name: "home", databaseURL: "a"), .init(name: "east", databaseURL: "b")],
        placements: ["red": .init(cell: "east"), "green": .init(cell: "home", state: .moving)])

    func testAPlacedRealmGoesToItsCellWhoeverElseHoldsACopy() {
        XCTAssertEqual(map.route(holders: ["home": "red", "east": "red"]), .cell("east"))
        XCTAssertEqual(map.route(holders: ["home": "red"]), .cell("east"), "placed elsewhere: its cell answers, not the stale copy")
    }

    func testAMovingRealmIsFencedAndAnUnplacedOneIsServedOnlyByItsOneHolder() {
        XCTAssertEqual(map.route(holders: ["home": "green", "east": "green"]), .fenced(realm: "green"))
        XCTAssertEqual(map.route(holders: ["east": "blue"]), .cell("east"))
        XCTAssertEqual(map.route(holders: ["home": "blue", "east": "blue"]), .unplaced(realm: "blue"), "never a guess between two copies")
    }

    func testAHostNoCellKnowsGoesHomeAndTwoRealmsOnOneHostDeferToThePlacedOne() {
        XCTAssertEqual(map.route(holders: [:]), .cell("home"))
        XCTAssertNil(CellMap(cells: []).route(holders: [:]))
        XCTAssertEqual(map.route(holders: ["home": "blue", "east": "red"]), .cell("east"))
        XCTAssertEqual(map.route(holders: ["home": "blue", "east": "yellow"]), .unplaced(realm: "blue"))
    }
}

/// Issue 71: the in-memory host index the router reads before any SQL.
final class CellHostIndexTests: XCTestCase {
    func testARefreshReplacesOneCellsHostsAndLeavesTheOthers() {
        let index = CellHostIndex()
        index.replace(cell: "home", with: [("red.test", "red"), ("shared.test", "red")])
        index.replace(cell: "east", with: [("shared.test", "red"), ("blue.test", "blue")])
        XCTAssertEqual(index.holders(ofHost: "shared.test"), ["home": "red", "east": "red"])
        index.replace(cell: "home", with: [("green.test", "green")])
        XCTAssertNil(index.holders(ofHost: "red.test"), "a host its cell no longer has is gone")
        XCTAssertEqual(index.holders(ofHost: "shared.test"), ["east": "red"])
        XCTAssertEqual(index.holders(ofHost: "green.test"), ["home": "green"])
        XCTAssertEqual(index.holders(ofHost: "blue.test"), ["east": "blue"])
    }
}

/// Issue 71: one cell's failover does not make the instance unready for the others.
final class CellReadinessTests: XCTestCase {
    func testTheInstanceIsReadyWhileAnyCellIsAndSaysWhichIsNot() {
        let ok = ReadinessProbe.Report(ready: true, checks: ["draining": "ok", "database": "ok", "migrations": "ok", "projections": "ok"])
        let down = ReadinessProbe.Report(ready: false, checks: ["draining": "ok", "database": "unreachable"])
        let one = CellReadiness.combine(["a": down, "b": ok])
        XCTAssertTrue(one.ready)
        XCTAssertEqual(one.checks, ["draining": "ok", "cell.a": "database: unreachable", "cell.b": "ok"])
        XCTAssertFalse(CellReadiness.combine(["a": down, "b": down]).ready, "no cell ready: no traffic")
        let draining = ReadinessProbe.Report(ready: false, checks: ["draining": "draining"])
        let drained = CellReadiness.combine(["a": draining, "b": ok])
        XCTAssertFalse(drained.ready, "draining takes the instance out whatever its cells say")
        XCTAssertEqual(drained.checks["draining"], "draining")
    }
}

extension CellReadinessTests {
    /// A cell whose check does not answer in time counts as not ready, and the instance's
    /// answer does not wait for it (a pool whose every connection hangs on a dead primary).
    func testACellThatDoesNotAnswerInTimeIsNotReadyAndDoesNotHoldTheAnswer() async throws {
        let database = try await TestDatabase.create(maxConnections: 1)
        let leased = ReadinessLease()
        // The pool's one connection is leased and not returned until the end: every check waits for it.
        let held = Task {
            try await database.pool.withConnection { _ in
                leased.signal()
                try await Task.sleep(for: .seconds(3600))
            }
        }
        try await Eventually.wait("the connection leased") { leased.isSet }
        let probe = ReadinessProbe(pool: database.pool, cacheFor: .zero)
        let report = await CellReadiness.check(probe, within: .milliseconds(200))
        XCTAssertFalse(report.ready)
        XCTAssertEqual(report.checks["database"], "no answer within 0.2 seconds")
        held.cancel()
        _ = await held.result
        let free = await CellReadiness.check(probe, within: .seconds(120))
        XCTAssertTrue(free.ready, "the same probe answers once the connection is back: \(free)")
        await database.drop()
    }
}

/// Set once, read from any task.
final class ReadinessLease: Sendable {
    private let flag = Mutex(false)
    func signal() { flag.withLock { $0 = true } }
    var isSet: Bool { flag.withLock { $0 } }
}
