import Foundation
import ModgudDomain
import XCTest

/// Issue 65: a code, a link or a passkey ceremony is the client's and the attested instance's
/// that started it (`FlowBinding`); a `required` client redeems only its own instance's.
final class FlowBindingTests: XCTestCase {
    let genuine = FlowBinding.Presenter(clientID: "genuine", attestedKey: "key-1", attestationRequired: true)

    func testTheRule() {
        let unbound = FlowBinding.unbound
        XCTAssertTrue(unbound.admits(.init(clientID: "app")), "served as before for a client that does not require attestation")
        XCTAssertTrue(unbound.admits(.init(clientID: "soft", attestedKey: "key-9")), "an attested `allowed` client too")
        XCTAssertFalse(unbound.admits(genuine), "a required client never redeems what an unattested request started")
        XCTAssertFalse(FlowBinding(clientID: "genuine").admits(genuine), "nor an unattested request that named it")
        XCTAssertFalse(unbound.admits(.init(clientID: "genuine", attestationRequired: true)), "without a key there is no instance")

        let attested = FlowBinding(clientID: "genuine", attestedKey: "key-1")
        XCTAssertTrue(attested.admits(genuine))
        XCTAssertFalse(attested.admits(.init(clientID: "genuine", attestedKey: "key-2", attestationRequired: true)), "another instance")
        XCTAssertFalse(attested.admits(.init(clientID: "soft", attestedKey: "key-1")), "another client")
        XCTAssertFalse(FlowBinding(attestedKey: "key-1").admits(.init(clientID: "soft")), "an attested flow needs its instance, whoever asks")

        let named = FlowBinding(clientID: "app")
        XCTAssertTrue(named.admits(.init(clientID: "app")))
        XCTAssertFalse(named.admits(.init(clientID: "other")))
        XCTAssertFalse(named.admits(.anyone))
    }

    func issued(_ hash: String, at time: Date, _ binding: FlowBinding) -> ChallengeIssued {
        ChallengeIssued(
            challengeID: UUID(), purpose: .loginCode, userID: UUID(), secretHash: hash, issuedAt: time, expiresAt: time + 600, binding: binding)
    }

    /// A refused presenter is answered as a wrong code, before the secret is compared, and
    /// nothing is written (no attempt counts): then the right one redeems it.
    func testAnotherClientsOrInstancesCodeIsAWrongOneAndWritesNothing() throws {
        let bound = FlowBinding(clientID: "genuine", attestedKey: "key-1")
        let state = try EmailChallenge.decide(.issue(issued("h", at: now, bound), cooldown: 120), state: EmailChallenge.initialState, now: now)
            .reduce(EmailChallenge.initialState, EmailChallenge.evolve)
        for presenter in [FlowBinding.Presenter(clientID: "genuine", attestedKey: "key-2", attestationRequired: true), .init(clientID: "soft"), .anyone] {
            for hash in ["h", "wrong"] {
                XCTAssertRefused("Challenge.Invalid") { _ = try EmailChallenge.decide(.redeem(presentedHash: hash, by: presenter), state: state, now: now + 1) }
            }
        }
        XCTAssertTrue(try EmailChallenge.decide(.redeem(presentedHash: "h", by: genuine), state: state, now: now + 1).consumeChallenge)
    }

    /// The silent resend holds for the same binding only: another binding gets its own code
    /// (the live one it could not redeem is voided).
    func testTheCooldownIsSilentOnlyForTheSameBinding() throws {
        let first = FlowBinding.unbound
        let state = try EmailChallenge.decide(.issue(issued("h1", at: now, first), cooldown: 120), state: EmailChallenge.initialState, now: now)
            .reduce(EmailChallenge.initialState, EmailChallenge.evolve)
        XCTAssertEqual(try EmailChallenge.decide(.issue(issued("h2", at: now + 10, first), cooldown: 120), state: state, now: now + 10), [])
        let other = try EmailChallenge.decide(
            .issue(issued("h2", at: now + 10, FlowBinding(clientID: "genuine", attestedKey: "key-1")), cooldown: 120), state: state, now: now + 10)
        XCTAssertEqual(other.count, 1)
    }

    /// A passkey ceremony: the same rule at `consume`, for login and sign-up alike.
    func testACeremonyIsItsInstancesAlone() throws {
        let begun = PasskeyCeremonyBegun(
            ceremonyID: UUID(), kind: .login, challenge: String(repeating: "A", count: 43), rpID: "acme.test", clientID: "genuine", userID: nil,
            expiresAt: now + 300, attestedKey: "key-1")
        let state = try PasskeyCeremony.decide(.begin(begun), state: PasskeyCeremony.initialState, now: now)
            .reduce(PasskeyCeremony.initialState, PasskeyCeremony.evolve)
        let other = FlowBinding.Presenter(clientID: "genuine", attestedKey: "key-2", attestationRequired: true)
        XCTAssertRefused("Ceremony.Invalid") { _ = try PasskeyCeremony.decide(.consume(kind: .login, by: other, userID: nil), state: state, now: now) }
        XCTAssertEqual(try PasskeyCeremony.decide(.consume(kind: .login, by: genuine, userID: nil), state: state, now: now).count, 1)
        let anonymous = PasskeyCeremonyBegun(
            ceremonyID: UUID(), kind: .login, challenge: String(repeating: "A", count: 43), rpID: "acme.test", clientID: nil, userID: nil,
            expiresAt: now + 300)
        let unbound = try PasskeyCeremony.decide(.begin(anonymous), state: PasskeyCeremony.initialState, now: now)
            .reduce(PasskeyCeremony.initialState, PasskeyCeremony.evolve)
        XCTAssertRefused("Ceremony.Invalid") { _ = try PasskeyCeremony.decide(.consume(kind: .login, by: genuine, userID: nil), state: unbound, now: now) }
        XCTAssertEqual(try PasskeyCeremony.decide(.consume(kind: .login, by: .init(clientID: "app"), userID: nil), state: unbound, now: now).count, 1)
    }

    /// Events written before issue 65 carry no binding: they read as unbound.
    func testOldEventsReadAsUnbound() throws {
        let json = #"{"challengeID":"6F9619FF-8B86-D011-B42D-00C04FC964FF","purpose":"login_code","secretHash":"h","issuedAt":0,"expiresAt":600}"#
        let old = try JSONDecoder().decode(ChallengeIssued.self, from: Data(json.utf8))
        XCTAssertEqual(old.binding, .unbound)
        let bound = issued("h", at: now, FlowBinding(clientID: "genuine", attestedKey: "key-1"))
        XCTAssertEqual(try JSONDecoder().decode(ChallengeIssued.self, from: JSONEncoder().encode(bound)).binding, bound.binding)
    }
}
