import Foundation
import ModgudDomain
import XCTest

/// RFC 8628's device authorization as a pure aggregate (issue 69, item 2): the poll's answer
/// in each state (section 3.5), one approval that needs user verification, one redemption, the
/// lifetime, and the user code's alphabet, length and typed forms (section 6.1).
final class DeviceAuthorizationTests: XCTestCase {
    typealias D = DeviceAuthorization

    func requested(client: String = "tv", secret: String = "secret-hash") throws -> D.State {
        let event = DeviceAuthorizationRequested(
            authorizationID: UUID(), clientID: client, scopes: ["openid", "offline_access"], resources: [], deviceSecretHash: secret,
            userCodeHash: "user-code-hash", expiresAt: now + D.lifetime, interval: D.interval)
        return try D.decide(.request(event), state: D.initialState, now: now).reduce(D.initialState, D.evolve)
    }

    func apply(_ command: D.Command, _ state: D.State, at time: Date = now) throws -> D.State {
        try D.decide(command, state: state, now: time).reduce(state, D.evolve)
    }

    func testThePollSeesPendingThenApprovedThenRedeemed() throws {
        var state = try requested()
        XCTAssertEqual(state.status(clientID: "tv", secretHash: "secret-hash", at: now), .pending)
        XCTAssertRefused("DeviceAuthorization.Pending") { _ = try D.decide(.redeem(clientID: "tv", secretHash: "secret-hash", familyID: UUID()), state: state, now: now) }
        state = try apply(.approve(userID: UUID(), authTime: now, amr: ["hwk", "user"], userVerified: true, via: "app"), state)
        XCTAssertEqual(state.status(clientID: "tv", secretHash: "secret-hash", at: now), .approved)
        // Another client, or another secret: as if unknown.
        XCTAssertEqual(state.status(clientID: "cli", secretHash: "secret-hash", at: now), .unknown)
        XCTAssertEqual(state.status(clientID: "tv", secretHash: "secret-hasH", at: now), .unknown)
        XCTAssertRefused("DeviceAuthorization.Invalid") { _ = try D.decide(.redeem(clientID: "tv", secretHash: "other", familyID: UUID()), state: state, now: now) }
        state = try apply(.redeem(clientID: "tv", secretHash: "secret-hash", familyID: UUID()), state)
        XCTAssertEqual(state.status(clientID: "tv", secretHash: "secret-hash", at: now), .redeemed)
        XCTAssertRefused("DeviceAuthorization.Invalid") { _ = try D.decide(.redeem(clientID: "tv", secretHash: "secret-hash", familyID: UUID()), state: state, now: now) }
    }

    func testApprovalNeedsUserVerificationAndHappensOnce() throws {
        let state = try requested()
        // A phished code approved by a tap without user verification: refused.
        XCTAssertRefused("DeviceAuthorization.UserVerificationRequired") {
            _ = try D.decide(.approve(userID: UUID(), authTime: now, amr: ["hwk"], userVerified: false, via: "app"), state: state, now: now)
        }
        let approved = try apply(.approve(userID: UUID(), authTime: now, amr: ["hwk", "user"], userVerified: true, via: "web"), state)
        XCTAssertRefused("DeviceAuthorization.NotPending") {
            _ = try D.decide(.approve(userID: UUID(), authTime: now, amr: ["hwk", "user"], userVerified: true, via: "app"), state: approved, now: now)
        }
        XCTAssertRefused("DeviceAuthorization.NotPending") { _ = try D.decide(.deny(userID: nil), state: approved, now: now) }
    }

    func testADeniedOrExpiredCodeAnswersItsError() throws {
        let denied = try apply(.deny(userID: UUID()), try requested())
        XCTAssertRefused("DeviceAuthorization.Denied") { _ = try D.decide(.redeem(clientID: "tv", secretHash: "secret-hash", familyID: UUID()), state: denied, now: now) }
        let state = try requested()
        let late = now + D.lifetime
        XCTAssertEqual(state.status(clientID: "tv", secretHash: "secret-hash", at: late), .expired)
        XCTAssertFalse(state.awaitsUser(at: late))
        XCTAssertRefused("DeviceAuthorization.NotPending") {
            _ = try D.decide(.approve(userID: UUID(), authTime: late, amr: ["hwk", "user"], userVerified: true, via: "app"), state: state, now: late)
        }
        XCTAssertRefused("DeviceAuthorization.Expired") { _ = try D.decide(.redeem(clientID: "tv", secretHash: "secret-hash", familyID: UUID()), state: state, now: late) }
        XCTAssertRefused("DeviceAuthorization.Exists") { _ = try D.decide(.request(state.requested!), state: state, now: now) }
    }

    func testUserCodesAreEightConsonantsAndTypedFormsNormalise() throws {
        var seen: Set<String> = []
        for seed in 0..<200 {
            var generator = SystemRandomNumberGenerator()
            let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            let code = try XCTUnwrap(UserCode(randomBytes: bytes), "seed \(seed)")
            XCTAssertEqual(code.characters.count, 8)
            XCTAssertTrue(code.characters.allSatisfy(UserCode.alphabet.contains), code.characters)
            seen.insert(code.characters)
        }
        XCTAssertGreaterThan(seen.count, 195, "codes repeat far more than 20^8 allows")
        // Bytes at or above 240 are dropped (uniformity); too few bytes give no code.
        XCTAssertNil(UserCode(randomBytes: [UInt8](repeating: 250, count: 64)))
        XCTAssertEqual(UserCode(randomBytes: [0, 1, 2, 3, 240, 4, 5, 6, 7])?.characters, "BCDFGHJK")
        let code = try XCTUnwrap(UserCode(typed: "wdjb-mjht"))
        XCTAssertEqual(code.description, "WDJB-MJHT")
        XCTAssertEqual(UserCode(typed: " WDJB MJHT "), code)
        for bad in ["WDJB-MJH", "WDJB-MJHA", "WDJB-MJHT1", "", "WDJB-MJH7"] { XCTAssertNil(UserCode(typed: bad), bad) }
    }
}
