import Foundation
import ModgudDomain
import XCTest

final class EmailChallengeTests: XCTestCase {
    func issued(_ hash: String, at time: Date) -> ChallengeIssued {
        ChallengeIssued(challengeID: UUID(), purpose: .loginCode, userID: UUID(), secretHash: hash, issuedAt: time, expiresAt: time + 600)
    }

    func run(_ command: EmailChallenge.Command, _ state: EmailChallenge.State, at time: Date) throws -> EmailChallenge.State {
        try EmailChallenge.decide(command, state: state, now: time).reduce(state, EmailChallenge.evolve)
    }

    func testResendWithinTheCooldownIsSilentAndANewCodeVoidsTheOld() throws {
        var state = try run(.issue(issued("h1", at: now), cooldown: 120), EmailChallenge.initialState, at: now)
        XCTAssertEqual(try EmailChallenge.decide(.issue(issued("h2", at: now + 60), cooldown: 120), state: state, now: now + 60), [])
        state = try run(.issue(issued("h2", at: now + 121), cooldown: 120), state, at: now + 121)
        let oldCode = try EmailChallenge.decide(.redeem(presentedHash: "h1"), state: state, now: now + 122)
        XCTAssertEqual(oldCode.count, 1, "the voided code is just a wrong guess now")
        guard case .attemptFailed = oldCode[0] else { return XCTFail("\(oldCode)") }
        state = try run(.redeem(presentedHash: "h2"), state, at: now + 122)
        XCTAssertTrue(state.consumed)
    }

    func testThreeWrongGuessesBurnTheCodeAndTheFourthFailsEvenWhenRight() throws {
        var state = try run(.issue(issued("right", at: now), cooldown: 120), EmailChallenge.initialState, at: now)
        for attempt in 1...3 {
            let events = try EmailChallenge.decide(.redeem(presentedHash: "wrong"), state: state, now: now + 1)
            XCTAssertEqual(events.count, attempt == 3 ? 2 : 1)
            state = events.reduce(state, EmailChallenge.evolve)
        }
        XCTAssertTrue(state.burned)
        XCTAssertRefused("Challenge.Invalid") { _ = try EmailChallenge.decide(.redeem(presentedHash: "right"), state: state, now: now + 2) }
    }

    func testExpiryAndSingleUse() throws {
        let state = try run(.issue(issued("h", at: now), cooldown: 120), EmailChallenge.initialState, at: now)
        XCTAssertRefused("Challenge.Invalid") { _ = try EmailChallenge.decide(.redeem(presentedHash: "h"), state: state, now: now + 600) }
        let used = try run(.redeem(presentedHash: "h"), state, at: now + 599)
        XCTAssertRefused("Challenge.Invalid") { _ = try EmailChallenge.decide(.redeem(presentedHash: "h"), state: used, now: now + 599) }
        // After use (or expiry) a new code may be issued at once, cooldown or not.
        XCTAssertEqual(try EmailChallenge.decide(.issue(issued("h2", at: now + 600), cooldown: 120), state: used, now: now + 600).count, 1)
    }

    func testGateDecidesWhatARightCodeDoes() throws {
        let state = try run(.issue(issued("h", at: now), cooldown: 120), EmailChallenge.initialState, at: now)
        XCTAssertRefused("TOTP.Required") { _ = try EmailChallenge.decide(.redeem(presentedHash: "h", gate: .secondFactorMissing), state: state, now: now + 1) }
        XCTAssertRefused("Account.CannotSignIn") {
            _ = try EmailChallenge.decide(.redeem(presentedHash: "h", gate: .accountCannotSignIn), state: state, now: now + 1)
        }
        // A gate never helps a wrong code: it is a wrong code first.
        let wrongCode = try EmailChallenge.decide(.redeem(presentedHash: "x", gate: .secondFactorMissing), state: state, now: now + 1)
        guard case .attemptFailed(let failed) = wrongCode.first else { return XCTFail("\(wrongCode)") }
        XCTAssertEqual(failed.reason, .wrongCode)
        // Wrong second factors count against the code and burn it like wrong codes.
        var current = state
        for _ in 1...3 { current = try run(.redeem(presentedHash: "h", gate: .secondFactorWrong), current, at: now + 1) }
        XCTAssertTrue(current.burned)
        XCTAssertRefused("Challenge.Invalid") { _ = try EmailChallenge.decide(.redeem(presentedHash: "h"), state: current, now: now + 2) }
    }

    /// Issue 40: a right link whose account owes a second factor is not spent. A missing one
    /// writes nothing; wrong ones count, and the limit burns the link.
    func testAMagicLinkOwingASecondFactorIsNotSpent() throws {
        let link = ChallengeIssued(
            challengeID: UUID(), purpose: .magicLink, userID: UUID(), secretHash: "t", issuedAt: now, expiresAt: now + 900)
        var state = try run(.issue(link, cooldown: 120), EmailChallenge.initialState, at: now)
        XCTAssertRefused("TOTP.Required") { _ = try EmailChallenge.decide(.redeem(presentedHash: "t", gate: .secondFactorMissing), state: state, now: now + 1) }
        for attempt in 1..<EmailChallenge.maxAttempts {
            let events = try EmailChallenge.decide(.redeem(presentedHash: "t", gate: .secondFactorWrong), state: state, now: now + 1)
            XCTAssertEqual(events.count, 1)
            guard case .attemptFailed(let failed) = events.first else { return XCTFail("\(events)") }
            XCTAssertEqual(failed.attempts, attempt)
            XCTAssertEqual(failed.reason, .wrongSecondFactor)
            state = events.reduce(state, EmailChallenge.evolve)
        }
        XCTAssertTrue(state.isLive(at: now + 2), "within the limit the link stays live")
        XCTAssertTrue(try EmailChallenge.decide(.redeem(presentedHash: "t"), state: state, now: now + 2).consumeChallenge, "the complete sign-in spends it")
        state = try run(.redeem(presentedHash: "t", gate: .secondFactorWrong), state, at: now + 2)
        XCTAssertTrue(state.burned, "the limit burns it")
        XCTAssertRefused("Challenge.Invalid") { _ = try EmailChallenge.decide(.redeem(presentedHash: "t"), state: state, now: now + 3) }
    }

    func testAWrongMagicTokenWritesNothing() throws {
        let link = ChallengeIssued(
            challengeID: UUID(), purpose: .magicLink, userID: UUID(), secretHash: "t", issuedAt: now, expiresAt: now + 900)
        let state = try run(.issue(link, cooldown: 120), EmailChallenge.initialState, at: now)
        for _ in 0..<5 {
            XCTAssertRefused("Challenge.Invalid") { _ = try EmailChallenge.decide(.redeem(presentedHash: "guess"), state: state, now: now + 1) }
        }
        XCTAssertEqual(try EmailChallenge.decide(.redeem(presentedHash: "t"), state: state, now: now + 899).count, 1, "guesses did not burn it")
    }
}
