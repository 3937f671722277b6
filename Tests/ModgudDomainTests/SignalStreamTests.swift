import Foundation
import ModgudDomain
import XCTest

/// Issue 30: the receiver's stream aggregate (pure decisions).
final class SignalStreamTests: XCTestCase {
    func created(_ configuration: SignalStreamConfiguration = SignalStreamConfiguration(method: .poll)) throws -> SignalStream.State {
        try SignalStream.decide(.create(streamID: "s1", clientID: "receiver", issuer: "https://login.example.com", configuration: configuration), state: SignalStream.initialState, now: now)
            .reduce(SignalStream.initialState, SignalStream.evolve)
    }

    func testPushEndpointsAreHttpsOrLoopbackAndPollStreamsNameNone() throws {
        for good in ["https://api.example.com/ssf", "http://127.0.0.1:8080/events", "http://localhost/e", "http://[::1]:9/e"] {
            XCTAssertNoThrow(try created(SignalStreamConfiguration(method: .push, endpointURL: good)), good)
        }
        for bad in ["http://api.example.com/ssf", "ftp://x/y", "https://user:pw@api.example.com/", "https://api.example.com/#x", "https://", "not a url", "http://127.0.0.1.evil.com/"] {
            XCTAssertRefused("SignalStream.InvalidEndpoint") { _ = try created(SignalStreamConfiguration(method: .push, endpointURL: bad)) }
        }
        XCTAssertRefused("SignalStream.PollEndpoint") { _ = try created(SignalStreamConfiguration(method: .poll, endpointURL: "https://x/y")) }
    }

    func testOneStreamPerReceiverUntilDeleted() throws {
        let state = try created()
        XCTAssertRefused("SignalStream.Exists") {
            _ = try SignalStream.decide(.create(streamID: "s2", clientID: "receiver", issuer: "i", configuration: .init(method: .poll)), state: state, now: now)
        }
        let deleted = try SignalStream.decide(.delete, state: state, now: now).reduce(state, SignalStream.evolve)
        XCTAssertFalse(deleted.exists)
        XCTAssertRefused("SignalStream.NotFound") { _ = try SignalStream.decide(.requestVerification(state: nil), state: deleted, now: now) }
    }

    func testSubjectsAndStatusChangeOnlyWhenTheyChange() throws {
        var state = try created()
        let user = UUID()
        XCTAssertEqual(try SignalStream.decide(.addSubject(user), state: state, now: now), [], "every user is on the stream already")
        state = try SignalStream.decide(.removeSubject(user), state: state, now: now).reduce(state, SignalStream.evolve)
        XCTAssertEqual(state.removedSubjects, [user])
        XCTAssertEqual(try SignalStream.decide(.removeSubject(user), state: state, now: now), [])
        state = try SignalStream.decide(.addSubject(user), state: state, now: now).reduce(state, SignalStream.evolve)
        XCTAssertEqual(state.removedSubjects, [])
        XCTAssertEqual(try SignalStream.decide(.setStatus(.enabled, reason: nil, by: "receiver"), state: state, now: now), [])
        XCTAssertEqual(try SignalStream.decide(.setStatus(.paused, reason: "x", by: "receiver"), state: state, now: now).count, 1)
    }

    func testVerificationRequestsAreSpacedByTheMinimumInterval() throws {
        var state = try created()
        state = try SignalStream.decide(.requestVerification(state: "a"), state: state, now: now).reduce(state, SignalStream.evolve)
        XCTAssertRefused("SignalStream.TooFrequent") { _ = try SignalStream.decide(.requestVerification(state: "b"), state: state, now: now.addingTimeInterval(4)) }
        XCTAssertEqual(try SignalStream.decide(.requestVerification(state: "b"), state: state, now: now.addingTimeInterval(5)).count, 1)
    }
}
