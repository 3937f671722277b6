import AsyncTestSupport
import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudHTTP
@testable import ModgudService
import PostgresTestSupport
import XCTest

/// Issue 10: slow or stalled clients cannot hold connections open, and the number of open
/// connections is capped. Real sockets against a live server.
final class ServerLimitsTests: XCTestCase {
    /// The production application on a real port (not HummingbirdTesting's live mode, whose
    /// configuration copy drops the connection cap).
    private func withServer(_ limits: ServerLimits, _ body: @Sendable @escaping (Int) async throws -> Void) async throws {
        let database = try await TestDatabase.create(maxConnections: 4)
        let core = try ModgudCore(pool: database.pool, masterKey: nil)
        let port = try RawSocket.freePort()
        let app = buildApplication(
            core: core, configuration: HTTPConfiguration(limits: limits), server: .init(address: .hostname("127.0.0.1", port: port)))
        let server = Task { try await app.runService() }
        try await Eventually.wait("the server listens on \(port)", every: .milliseconds(50)) { (try? RawSocket(port: port)) != nil }
        do {
            try await body(port)
        } catch {
            server.cancel()
            throw error
        }
        server.cancel()
        _ = await server.result
        await database.drop()
    }

    // The limits are timeouts, so these tests do involve time, but never a time that a loaded
    // machine can miss: the stimulus (a trickle of bytes that keeps a connection from ever
    // being idle) goes on until the outcome, and the only other limit that could end the
    // connection is set 30 times higher than the one under test. Waits are hang guards.

    func testHundredSlowHeaderClientsAreAllClosedAfterTheHeaderTimeout() async throws {
        try await withServer(ServerLimits(headerTimeout: .seconds(1), bodyTimeout: .seconds(30), idleTimeout: .seconds(30))) { port in
            let sockets = try (0..<100).map { _ in try RawSocket(port: port) }
            for socket in sockets { socket.send("POST /connect/token HTTP/1.1\r\nHost: localhost\r\n") }
            // One header line every 200 ms to every open socket: the head is never complete and
            // the connection never idle, so only the header timeout can close it.
            var open = sockets
            let started = ContinuousClock.now
            while !open.isEmpty && ContinuousClock.now - started < .seconds(25) {
                open = open.filter { $0.send("X-Slow: 1\r\n") && !$0.isClosedByPeer(within: 0) }
                try await Task.sleep(for: .milliseconds(200))
            }
            XCTAssertEqual(open.count, 0, "every slow-header connection is closed, by the 1 s header timeout (idle: 30 s)")
        }
    }

    func testASlowBodyIsCutAfterTheBodyTimeout() async throws {
        try await withServer(ServerLimits(headerTimeout: .seconds(30), bodyTimeout: .seconds(1), idleTimeout: .seconds(30))) { port in
            let socket = try RawSocket(port: port)
            socket.send(
                "POST /connect/token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n")
            // A byte every 200 ms: the body would take hours, the connection is never idle.
            var stillOpen = true
            let started = ContinuousClock.now
            while stillOpen && ContinuousClock.now - started < .seconds(25) {
                stillOpen = socket.send("a") && !socket.isClosedByPeer(within: 200)
            }
            XCTAssertFalse(stillOpen, "closed by the 1 s body timeout (header and idle: 30 s)")
        }
    }

    func testAnIdleKeepAliveConnectionIsClosedAfterTheIdleTimeoutButServedBeforeIt() async throws {
        try await withServer(ServerLimits(headerTimeout: .seconds(30), bodyTimeout: .seconds(30), idleTimeout: .seconds(1))) { port in
            let socket = try RawSocket(port: port)
            // Keep-alive: three requests on one connection, each sent as soon as the last answer came.
            for round in 1...3 {
                socket.send("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
                XCTAssertTrue(socket.read(until: "ok", timeoutMilliseconds: 60_000).hasPrefix("HTTP/1.1 200"), "request \(round) served")
            }
            XCTAssertTrue(socket.isClosedByPeer(within: 25_000), "closed once idle for the 1 s idle timeout (header and body: 30 s)")
        }
    }

    func testConnectionsPastTheCapWaitUntilOneCloses() async throws {
        try await withServer(ServerLimits(headerTimeout: .seconds(30), bodyTimeout: .seconds(30), idleTimeout: .seconds(30), maxConnections: 2)) {
            port in
            var holders = try (0..<2).map { _ in try RawSocket(port: port) }
            for holder in holders {  // both connections are in use and stay open
                holder.send("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
                XCTAssertTrue(holder.read(until: "ok", timeoutMilliseconds: 60_000).hasPrefix("HTTP/1.1 200"))
            }
            let third = try RawSocket(port: port)
            third.send("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
            // A negative check: a loaded machine can only make an answer later, never earlier.
            XCTAssertEqual(third.read(until: "ok", timeoutMilliseconds: 700), "", "not served while two connections are open")
            holders.removeFirst()  // closes one
            XCTAssertTrue(third.read(until: "ok", timeoutMilliseconds: 60_000).hasPrefix("HTTP/1.1 200"), "served once a slot is free")
        }
    }
}
