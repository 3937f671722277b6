import AsyncTestSupport
import EventSourcing
import Foundation
import XCTest

/// A worker that replays a script of step outcomes per projection.
private actor ScriptedWorker: ProjectionWorker {
    var scripts: [String: [ProjectionStep]]
    var steps: [String] = []
    var waits = 0

    init(_ scripts: [String: [ProjectionStep]]) { self.scripts = scripts }

    func step(_ projection: String) -> ProjectionStep {
        steps.append(projection)
        guard var script = scripts[projection], !script.isEmpty else { return .caughtUp }
        let next = script.removeFirst()
        scripts[projection] = script
        return next
    }

    func waitForEvents(timeout: Duration) async throws {
        waits += 1
    }
}

/// A worker whose store is down for the first `outages` steps.
private actor FlakyWorker: ProjectionWorker {
    struct Down: Error {}
    var outages: Int
    var applied = 0

    init(outages: Int) { self.outages = outages }

    func step(_ projection: String) throws -> ProjectionStep {
        if outages > 0 {
            outages -= 1
            throw Down()
        }
        applied += 1
        return applied == 1 ? .applied(1) : .caughtUp
    }

    func waitForEvents(timeout: Duration) async throws {
        try await Task.sleep(for: timeout)
    }
}

private final class ErrorLog: @unchecked Sendable {
    private let lock = NSLock()
    private var delays: [Duration] = []
    func record(_ delay: Duration) { lock.withLock { delays.append(delay) } }
    var recorded: [Duration] { lock.withLock { delays } }
}

final class ProjectionRunnerTests: XCTestCase {
    func testAnUnreachableStoreNeverEndsTheRunnerItRetriesWithBackoffAndResumes() async throws {
        let worker = FlakyWorker(outages: 3)
        let runner = ProjectionRunner(worker: worker, projections: ["a"], pollInterval: .milliseconds(5))
        let log = ErrorLog()
        let task = Task { await runner.run { _, delay in log.record(delay) } }
        // 250 + 500 + 1000 ms of backoff, then the batch applies.
        try await Eventually.wait("the runner resumed after the outage") { await worker.applied > 0 }
        task.cancel()
        _ = await task.value
        let applied = await worker.applied
        XCTAssertGreaterThan(applied, 0, "the runner resumed after the outage")
        XCTAssertEqual(log.recorded, [.milliseconds(250), .milliseconds(500), .seconds(1)])
    }

    func testBackoffDoublesUpToItsMaximumAndResets() {
        var backoff = RetryBackoff(initial: .milliseconds(250), maximum: .seconds(5))
        let delays = (0..<8).map { _ in backoff.nextDelay() }
        XCTAssertEqual(delays, [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5), .seconds(5)])
        backoff.reset()
        XCTAssertEqual(backoff.nextDelay(), .milliseconds(250))
    }

    func testRunUntilIdleDrainsEachProjectionAndStopsOnFailureOrBusy() async throws {
        let worker = ScriptedWorker([
            "a": [.applied(10), .applied(5), .caughtUp],
            "b": [.busy, .applied(99)],
            "c": [.applied(1), .failed("boom"), .applied(7)],
        ])
        let runner = ProjectionRunner(worker: worker, projections: ["a", "b", "c"])
        let total = try await runner.runUntilIdle()
        XCTAssertEqual(total, 16)
        let steps = await worker.steps
        XCTAssertEqual(steps, ["a", "a", "a", "b", "c", "c"])
    }

    func testTurnGivesOthersATurnAfterTheBatchLimit() async throws {
        let worker = ScriptedWorker(["a": Array(repeating: .applied(1), count: 10), "b": [.applied(1)]])
        let runner = ProjectionRunner(worker: worker, projections: ["a", "b"], maxBatchesPerTurn: 3)
        let more = try await runner.turn()
        XCTAssertTrue(more, "a still had work after its three batches")
        let steps = await worker.steps
        XCTAssertEqual(steps, ["a", "a", "a", "b", "b"])
    }

    func testRunSleepsWhenIdleAndStopsOnCancellation() async throws {
        let worker = ScriptedWorker([:])
        let runner = ProjectionRunner(worker: worker, projections: ["a"], pollInterval: .milliseconds(1))
        let task = Task { await runner.run() }
        try await Eventually.wait("the idle runner sleeps") { await worker.waits > 0 }
        task.cancel()
        _ = await task.result
        let waits = await worker.waits
        XCTAssertGreaterThan(waits, 0)
    }
}

final class InMemoryEventStoreTests: XCTestCase {
    private struct Ping: DomainEvent { static let eventType = "ping" }

    func testExpectedVersionIsEnforced() async throws {
        let store = InMemoryEventStore()
        let ref = StreamRef(type: "t", key: "1", realm: "r")
        _ = try await store.append([try NewEvent(Ping())], to: ref, expected: .noStream, metadata: .none)
        do {
            _ = try await store.append([try NewEvent(Ping())], to: ref, expected: .noStream, metadata: .none)
            XCTFail("conflict expected")
        } catch let error as EventStoreError {
            XCTAssertEqual(error, .wrongExpectedVersion(stream: "t-1", expected: .noStream, actual: 1))
        }
        let recorded = try await store.append([try NewEvent(Ping()), try NewEvent(Ping())], to: ref, expected: .exact(1), metadata: .none)
        XCTAssertEqual(recorded.map(\.streamVersion), [2, 3])
        let all = await store.readAll(after: recorded[0].cursor, limit: 10, filter: .all)
        XCTAssertEqual(all.map(\.streamVersion), [3])
    }
}
