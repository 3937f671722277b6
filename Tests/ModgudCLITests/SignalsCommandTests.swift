import EventSourcing
import Foundation
import ModgudDomain
@testable import ModgudService
import PostgresTestSupport
import XCTest

/// Issue 30: `modgud ssf streams|status|dead|retry` against a real database, with a receiver's
/// stream made through the service and one SET dead-lettered by a push nobody answers.
final class SignalsCommandTests: XCTestCase {
    var database: TestDatabase!
    var cli: CLIRunner!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 6)
        cli = CLIRunner(databaseURL: database.url)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    func testStreamsStatusDeadAndRetry() async throws {
        try cli.ok(["realm", "create", "acme", "--host", "login.acme.test"])
        try cli.ok(["realm", "rotate-key", "acme"])
        try cli.ok(["client", "create", "acme", "receiver", "--type", "confidential", "--grant", "client_credentials", "--scope", "ssf.manage"])
        let pool = database.makePool(maxConnections: 4)
        let core = try ModgudCore(pool: pool, masterKey: Array(try XCTUnwrap(Data(base64Encoded: cli.masterKey))))
        let request = SignalStreamRequest(method: .push, endpointURL: "http://127.0.0.1:1/events")
        let stream = try await core.signalStreams.create(realm: "acme", clientID: "receiver", issuer: "https://login.acme.test", request: request, metadata: .init())
        let streamID = try XCTUnwrap(stream.streamID)
        try await core.signalStreams.verify(realm: "acme", clientID: "receiver", state: "x", metadata: .init())
        let transmitter = core.makeSignalTransmitter()
        while case .applied = try await transmitter.step(SignalTransmitter.name) {}
        await transmitter.shutdown()
        _ = try await core.makeSignalPusher(settings: SignalPusher.Settings(maxAttempts: 1)).deliverOneStream()

        let streams = try cli.ok(["ssf", "streams"])
        XCTAssertTrue(streams.contains("acme\treceiver\t\(streamID)\tpush\tenabled\t0\t1"), streams)
        let dead = try cli.ok(["ssf", "dead"])
        XCTAssertTrue(dead.contains("\tverification\tattempts 1\t"), dead)
        XCTAssertFalse(dead.contains("x@"), "no subject")
        XCTAssertEqual(try cli.ok(["ssf", "retry", "--stream", streamID]), "1 dead SETs are pending again\n")
        XCTAssertTrue(try cli.ok(["ssf", "streams"]).contains("\tenabled\t1\t0"))

        XCTAssertEqual(try cli.ok(["ssf", "status", "acme", "receiver", "paused", "--reason", "maintenance"]), "stream \(streamID) of receiver: paused\n")
        let events = try cli.ok(["events", "replay", "--type", "ssf_stream.status_changed"])
        XCTAssertTrue(events.contains(#""by": "operator""#) && events.contains(#""actor":"admin:cli""#), events)
        XCTAssertTrue(try cli.fails(["ssf", "status", "acme", "receiver", "asleep"]).contains("enabled, paused or disabled"))
        XCTAssertTrue(try cli.fails(["ssf", "status", "acme", "nobody", "paused"]).contains("SignalStream.NotFound"))
        await pool.close()
    }
}
