import Foundation
import ModgudDomain
import XCTest

final class PasskeyCeremonyTests: XCTestCase {
    let challenge = String(repeating: "A", count: 43)

    func begun(kind: PasskeyCeremony.Kind = .login, client: String? = "ios", user: UUID? = nil) throws -> PasskeyCeremony.State {
        let event = PasskeyCeremonyBegun(
            ceremonyID: UUID(), kind: kind, challenge: challenge, rpID: "acme.test", clientID: client, userID: user, expiresAt: now + 300)
        return try PasskeyCeremony.decide(.begin(event), state: PasskeyCeremony.initialState, now: now).reduce(PasskeyCeremony.initialState, PasskeyCeremony.evolve)
    }

    func testSingleUseExpiryKindAndClientBinding() throws {
        let state = try begun()
        XCTAssertRefused("Ceremony.Invalid") { _ = try PasskeyCeremony.decide(.consume(kind: .login, by: .init(clientID: "web"), userID: nil), state: state, now: now) }
        XCTAssertRefused("Ceremony.Invalid") { _ = try PasskeyCeremony.decide(.consume(kind: .enrollment, by: .init(clientID: "ios"), userID: nil), state: state, now: now) }
        XCTAssertRefused("Ceremony.Invalid") { _ = try PasskeyCeremony.decide(.consume(kind: .login, by: .init(clientID: "ios"), userID: nil), state: state, now: now + 300) }
        let used = try PasskeyCeremony.decide(.consume(kind: .login, by: .init(clientID: "ios"), userID: nil), state: state, now: now + 299)
            .reduce(state, PasskeyCeremony.evolve)
        XCTAssertRefused("Ceremony.Invalid") { _ = try PasskeyCeremony.decide(.consume(kind: .login, by: .init(clientID: "ios"), userID: nil), state: used, now: now) }
        // An anonymous begin binds to no client: any client may redeem it.
        let anonymous = try begun(client: nil)
        XCTAssertEqual(try PasskeyCeremony.decide(.consume(kind: .login, by: .init(clientID: "web"), userID: nil), state: anonymous, now: now).count, 1)
    }

    func testEnrollmentIsBoundToItsUser() throws {
        let user = UUID()
        let state = try begun(kind: .enrollment, user: user)
        XCTAssertRefused("Ceremony.Invalid") { _ = try PasskeyCeremony.decide(.consume(kind: .enrollment, by: .init(clientID: "ios"), userID: UUID()), state: state, now: now) }
        XCTAssertEqual(try PasskeyCeremony.decide(.consume(kind: .enrollment, by: .init(clientID: "ios"), userID: user), state: state, now: now).count, 1)
        XCTAssertRefused("Ceremony.WeakChallenge") {
            _ = try PasskeyCeremony.decide(
                .begin(PasskeyCeremonyBegun(ceremonyID: UUID(), kind: .login, challenge: "short", rpID: "a.b", clientID: nil, userID: nil, expiresAt: now)),
                state: PasskeyCeremony.initialState, now: now)
        }
    }
}

final class PasskeyAggregateTests: XCTestCase {
    func enrolled(signCount: UInt32 = 0) throws -> Passkey.State {
        let event = PasskeyEnrolled(
            passkeyID: UUID(), userID: UUID(), credentialID: "Y3JlZA", rpID: "acme.test", publicKey: "cGs", algorithm: -7, signCount: signCount,
            aaguid: "AAAAAAAAAAAAAAAAAAAAAA", backupEligible: true, backedUp: false, transports: ["internal"], attestationFormat: "none",
            displayName: .plain("Phone"), clientID: "ios", createdAt: now)
        return try Passkey.decide(.enroll(event), state: Passkey.initialState, now: now).reduce(Passkey.initialState, Passkey.evolve)
    }

    func testSignCountMustIncreaseWhenEitherIsNonZero() throws {
        var state = try enrolled()
        // Both zero: authenticators without counters are fine.
        let zero = try Passkey.decide(.recordUse(signCount: 0, backedUp: false, at: now), state: state, now: now)
        guard case .used = zero.first else { return XCTFail("\(zero)") }
        state = try Passkey.decide(.recordUse(signCount: 5, backedUp: true, at: now + 1), state: state, now: now).reduce(state, Passkey.evolve)
        XCTAssertEqual(state.signCount, 5)
        XCTAssertEqual(state.lastUsedAt, now + 1)
        for stale in [UInt32(5), 4, 0] {
            let events = try Passkey.decide(.recordUse(signCount: stale, backedUp: true, at: now + 2), state: state, now: now)
            XCTAssertEqual(events, [.cloneSuspected(PasskeyCloneSuspected(storedSignCount: 5, receivedSignCount: stale))])
            XCTAssertEqual(events.reduce(state, Passkey.evolve).signCount, 5, "a suspected clone leaves the count")
        }
    }

    func testDeletedPasskeysRefuseEverything() throws {
        var state = try enrolled()
        state = try Passkey.decide(.delete(by: "user:x"), state: state, now: now).reduce(state, Passkey.evolve)
        XCTAssertFalse(state.isActive)
        XCTAssertRefused("Passkey.NotFound") { _ = try Passkey.decide(.recordUse(signCount: 9, backedUp: false, at: now), state: state, now: now) }
        XCTAssertRefused("Passkey.NotFound") { _ = try Passkey.decide(.delete(by: "admin"), state: state, now: now) }
    }
}
