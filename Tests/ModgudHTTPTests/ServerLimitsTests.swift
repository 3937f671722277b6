import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudHTTP
import ModgudService
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
        for _ in 0..<100 where (try? RawSocket(port: port)) == nil { try await Task.sleep(for: .milliseconds(50)) }
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

    func testHundredSlowHeaderClientsAreAllClosedAfterTheHeaderTimeout() async throws {
        try await withServer(ServerLimits(headerTimeout: .seconds(1), bodyTimeout: .seconds(5), idleTimeout: .seconds(5))) { port in
            let sockets = try (0..<100).map { _ in try RawSocket(port: port) }
            for socket in sockets { socket.send("POST /connect/token HTTP/1.1\r\nHost: localhost\r\n") }
            // One header line every 300 ms: the head is never complete.
            for _ in 0..<4 {
                try await Task.sleep(for: .milliseconds(300))
                for socket in sockets { socket.send("X-Slow: 1\r\n") }
            }
            let closed = sockets.filter { $0.isClosedByPeer(within: 1500) }.count
            XCTAssertEqual(closed, 100, "every slow-header connection is closed")
        }
    }

    func testASlowBodyIsCutAfterTheBodyTimeout() async throws {
        try await withServer(ServerLimits(headerTimeout: .seconds(5), bodyTimeout: .seconds(1), idleTimeout: .seconds(5))) { port in
            let socket = try RawSocket(port: port)
            socket.send(
                "POST /connect/token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 50\r\n\r\n")
            var stillOpen = true
            for _ in 0..<10 where stillOpen {  // a byte every 300 ms: 50 bytes would take 15 s
                stillOpen = socket.send("a") && !socket.isClosedByPeer(within: 300)
            }
            XCTAssertFalse(stillOpen, "closed within 3 s of a 1 s body timeout")
        }
    }

    func testAnIdleKeepAliveConnectionIsClosedAfterTheIdleTimeoutButServedBeforeIt() async throws {
        try await withServer(ServerLimits(headerTimeout: .seconds(5), bodyTimeout: .seconds(5), idleTimeout: .seconds(1))) { port in
            let socket = try RawSocket(port: port)
            socket.send("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
            XCTAssertTrue(socket.read(until: "ok", timeoutMilliseconds: 2000).hasPrefix("HTTP/1.1 200"))
            try await Task.sleep(for: .milliseconds(400))
            socket.send("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
            XCTAssertTrue(socket.read(until: "ok", timeoutMilliseconds: 2000).hasPrefix("HTTP/1.1 200"), "still served within the idle time")
            XCTAssertFalse(socket.isClosedByPeer(within: 500))
            XCTAssertTrue(socket.isClosedByPeer(within: 1500), "closed once idle for the idle timeout")
        }
    }

    func testConnectionsPastTheCapWaitUntilOneCloses() async throws {
        try await withServer(ServerLimits(headerTimeout: .seconds(30), bodyTimeout: .seconds(30), idleTimeout: .seconds(30), maxConnections: 2)) {
            port in
            var holders = try (0..<2).map { _ in try RawSocket(port: port) }
            for holder in holders {  // both connections are in use and stay open
                holder.send("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
                XCTAssertTrue(holder.read(until: "ok", timeoutMilliseconds: 2000).hasPrefix("HTTP/1.1 200"))
            }
            let third = try RawSocket(port: port)
            third.send("GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
            XCTAssertEqual(third.read(until: "ok", timeoutMilliseconds: 700), "", "not served while two connections are open")
            holders.removeFirst()  // closes one
            XCTAssertTrue(third.read(until: "ok", timeoutMilliseconds: 3000).hasPrefix("HTTP/1.1 200"), "served once a slot is free")
        }
    }
}
