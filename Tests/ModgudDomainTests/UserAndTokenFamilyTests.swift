import EventSourcing
import Foundation
import ModgudDomain
import XCTest

final class UserTests: XCTestCase {
    let id = UUID()

    func registered() throws -> User.State {
        try User.decide(
            .register(
                id: id, email: .plain(EmailAddress("  Ada@Example.COM ")!.value), emailConfirmed: true, username: nil,
                firstName: User.cleanName(" Ada ").map(PersonalText.plain), lastName: nil, securityStamp: "s1", via: "otp"),
                state: User.initialState, now: now
        ).reduce(User.initialState, User.evolve)
    }

    func testRegistrationNormalizesEmailAndNames() throws {
        let state = try registered()
        XCTAssertEqual(state.email, .plain("ada@example.com"))
        XCTAssertEqual(state.firstName, .plain("Ada"))
        XCTAssertNil(User.cleanName("   "))
        XCTAssertEqual(User.cleanName(String(repeating: "x", count: 300))?.count, 200)
        XCTAssertTrue(state.canSignIn)
        XCTAssertNil(EmailAddress("no-at-sign"))
        XCTAssertNil(EmailAddress("a@b"))
        XCTAssertNil(EmailAddress("a b@c.com"))
        // Issue 10: control characters (NUL cannot be stored in jsonb), RFC 5321 lengths, empty labels.
        XCTAssertNil(EmailAddress("\u{0}@x.yz"))
        XCTAssertNil(EmailAddress("a\u{7}b@x.yz"))
        XCTAssertNil(EmailAddress("a@x\u{85}.yz"))
        XCTAssertNil(EmailAddress("a@x..yz"))
        XCTAssertNil(EmailAddress(String(repeating: "a", count: 65) + "@x.yz"))
        XCTAssertNotNil(EmailAddress(String(repeating: "a", count: 64) + "@x.yz"))
        XCTAssertNil(EmailAddress("a@" + String(repeating: "b", count: 64) + ".yz"))
        XCTAssertNil(EmailAddress("a@" + Array(repeating: String(repeating: "b", count: 60), count: 5).joined(separator: ".") + ".yz"))
        XCTAssertNil(EmailAddress(String(repeating: "é", count: 40) + "@x.yz"), "64 octets, not characters")
    }

    func testDisableAndDeleteRotateTheStamp() throws {
        var state = try registered()
        let disabled = try User.decide(.disable(newStamp: "s2"), state: state, now: now)
        XCTAssertEqual(disabled.count, 2)
        state = disabled.reduce(state, User.evolve)
        XCTAssertEqual(state.securityStamp, "s2")
        XCTAssertFalse(state.canSignIn)
        state = try User.decide(.enable, state: state, now: now).reduce(state, User.evolve)
        XCTAssertTrue(state.canSignIn)
        XCTAssertEqual(state.securityStamp, "s2", "enabling does not resurrect old tokens")
        state = try User.decide(.delete(newStamp: "s3"), state: state, now: now).reduce(state, User.evolve)
        XCTAssertEqual(state.status, .deleted)
        XCTAssertRefused("User.Deleted") { _ = try User.decide(.enable, state: state, now: now) }
    }

    /// Issue 31: roles are granted and taken away one at a time; nothing changes, nothing is written.
    func testRolesAreGrantedAndTakenAwayAndCheckedByName() throws {
        var state = try registered()
        let granted = try User.decide(.setRole("operator", granted: true), state: state, now: now)
        XCTAssertEqual(granted, [.rolesChanged(UserRolesChanged(roles: ["operator"]))])
        state = granted.reduce(state, User.evolve)
        XCTAssertEqual(try User.decide(.setRole("operator", granted: true), state: state, now: now), [])
        state = try User.decide(.setRole("auditor", granted: true), state: state, now: now).reduce(state, User.evolve)
        XCTAssertEqual(state.roles, ["auditor", "operator"], "kept sorted")
        state = try User.decide(.setRole("operator", granted: false), state: state, now: now).reduce(state, User.evolve)
        XCTAssertEqual(state.roles, ["auditor"])
        XCTAssertEqual(try User.decide(.setRole("operator", granted: false), state: state, now: now), [])
        for bad in ["", "Operator", "a b", String(repeating: "x", count: 65), "op<"] {
            XCTAssertRefused("User.InvalidRole") { _ = try User.decide(.setRole(bad, granted: true), state: state, now: now) }
        }
        state = try User.decide(.delete(newStamp: "s9"), state: state, now: now).reduce(state, User.evolve)
        XCTAssertRefused("User.Deleted") { _ = try User.decide(.setRole("operator", granted: true), state: state, now: now) }
    }

    /// Issue 14: only an unconfirmed passkey sign-up can be retired by another's proof of the
    /// mailbox; the retirement deletes it and kills its tokens.
    func testOnlyAnUnprovenPasskeySignUpCanBeRetired() throws {
        XCTAssertFalse(try registered().isUnprovenPasskeySignUp, "a code-made account is proven")
        XCTAssertRefused("User.Proven") { _ = try User.decide(.retireUnproven(newStamp: "x"), state: try self.registered(), now: now) }
        var state = try User.decide(
            .register(
                id: id, email: .plain("ada@example.com"), emailConfirmed: false, username: nil, firstName: nil, lastName: nil, securityStamp: "s1",
                via: User.passkeySignUpVia), state: User.initialState, now: now
        ).reduce(User.initialState, User.evolve)
        XCTAssertTrue(state.isUnprovenPasskeySignUp)
        let confirmed = try User.decide(.confirmEmail, state: state, now: now).reduce(state, User.evolve)
        XCTAssertFalse(confirmed.isUnprovenPasskeySignUp, "confirming the address proves it")
        let retired = try User.decide(.retireUnproven(newStamp: "s2"), state: state, now: now)
        XCTAssertEqual(retired.first, .deleted(UserDeleted(reason: .mailboxProvenByAnother)))
        state = retired.reduce(state, User.evolve)
        XCTAssertEqual(state.status, .deleted)
        XCTAssertEqual(state.securityStamp, "s2")
        XCTAssertFalse(state.isUnprovenPasskeySignUp)
    }

    func testTOTPAndProfileChanges() throws {
        var state = try registered()
        state = try User.decide(.enableTOTP(encryptedSecret: "ciphertext"), state: state, now: now).reduce(state, User.evolve)
        XCTAssertRefused("TOTP.AlreadyEnabled") { _ = try User.decide(.enableTOTP(encryptedSecret: "x"), state: state, now: now) }
        // Sealed names differ on every sealing, so the domain cannot see "unchanged": it records.
        XCTAssertEqual(
            try User.decide(.changeProfile(username: nil, firstName: .plain("Ada"), lastName: nil), state: state, now: now),
            [.profileChanged(UserProfileChanged(username: nil, firstName: .plain("Ada"), lastName: nil))])
        state = try User.decide(.disableTOTP, state: state, now: now).reduce(state, User.evolve)
        XCTAssertNil(state.encryptedTOTPSecret)
    }

    func testTOTPEnrollmentNeedsAPendingSecretAndEachStepIsAcceptedOnce() throws {
        var state = try registered()
        XCTAssertRefused("TOTP.NoEnrollment") { _ = try User.decide(.confirmTOTPEnrollment(step: 10), state: state, now: now) }
        XCTAssertRefused("TOTP.NotEnabled") { _ = try User.decide(.acceptTOTPStep(10), state: state, now: now) }
        state = try User.decide(.beginTOTPEnrollment(encryptedSecret: "pending"), state: state, now: now).reduce(state, User.evolve)
        XCTAssertNil(state.encryptedTOTPSecret, "not on before a code is confirmed")
        state = try User.decide(.confirmTOTPEnrollment(step: 10), state: state, now: now).reduce(state, User.evolve)
        XCTAssertEqual(state.encryptedTOTPSecret, "pending")
        XCTAssertNil(state.pendingTOTPSecret)
        XCTAssertEqual(state.lastTOTPStep, 10, "the confirming code is spent")
        XCTAssertRefused("TOTP.StepUsed") { _ = try User.decide(.acceptTOTPStep(10), state: state, now: now) }
        XCTAssertRefused("TOTP.StepUsed") { _ = try User.decide(.acceptTOTPStep(9), state: state, now: now) }
        state = try User.decide(.acceptTOTPStep(11), state: state, now: now).reduce(state, User.evolve)
        XCTAssertEqual(state.lastTOTPStep, 11)
    }
}

final class TokenFamilyTests: XCTestCase {
    func access(_ hash: String) -> IssuedAccessToken { IssuedAccessToken(hash: hash, expiresAt: now + 900, format: .reference) }

    func started(stamp: String = "s1") throws -> TokenFamily.State {
        let start = TokenFamilyStarted(
            familyID: UUID(), clientID: "app", userID: UUID(), scopes: ["openid", "offline_access"], audiences: ["app"],
            grantType: "urn:cocoar:otp", authTime: now, amr: ["otp"], securityStamp: stamp, accessToken: access("a0"),
            refreshTokenHash: "r0", refreshExpiresAt: now + 14 * 86400)
        return try TokenFamily.decide(.start(start), state: TokenFamily.initialState, now: now).reduce(TokenFamily.initialState, TokenFamily.evolve)
    }

    func refresh(_ presented: String, to next: String, state: TokenFamily.State, stamp: String? = "s1", at time: Date = now) throws
        -> [TokenFamilyEvent]
    {
        try TokenFamily.decide(
            .refresh(presentedHash: presented, newRefreshHash: next, newRefreshExpiresAt: time + 14 * 86400, accessToken: access("a-\(next)"),
                userStamp: stamp), state: state, now: time)
    }

    func refresh(_ presented: String, to next: String, state: TokenFamily.State, at time: Date, sessionEndsAt: Date? = nil, grace: TimeInterval)
        throws -> TokenFamily.State
    {
        try TokenFamily.decide(
            .refresh(presentedHash: presented, newRefreshHash: next, newRefreshExpiresAt: time + 14 * 86400, accessToken: access("a-\(next)"),
                userStamp: "s1", sessionEndsAt: sessionEndsAt, reuseGrace: grace), state: state, now: time
        ).reduce(state, TokenFamily.evolve)
    }

    /// Issue 11: a sign-in ends after its absolute lifetime however often it is refreshed, and
    /// no refresh token outlives it.
    func testTheAbsoluteSessionLifetimeCapsRefreshesAndTheirExpiry() throws {
        var state = try started()
        let end = now + 90 * 86400
        var time = now
        for step in 1...6 {  // every 13 days: each refresh token lives 14
            time = now + Double(step) * 13 * 86400 - 3600
            let next = "r\(step)"
            state = try refresh("r\(step - 1)", to: next, state: state, at: time, sessionEndsAt: end, grace: 0)
            XCTAssertEqual(state.currentRefreshHash, next)
            XCTAssertLessThanOrEqual(state.refreshExpiresAt!, end, "capped at the session's end")
        }
        XCTAssertEqual(state.refreshExpiresAt, end)
        let ended = try refresh("r6", to: "r7", state: state, at: end, sessionEndsAt: end, grace: 0)
        XCTAssertEqual(ended.currentRefreshHash, "r6", "nothing rotated after the end")
        XCTAssertEqual(ended.lastRefusalAt, end, "the refusal is recorded (issue 43)")
    }

    /// Issue 11: within the reuse grace, the token the last rotation spent gets a new token too,
    /// both answers' tokens stay valid until one is used, and using one retires the other.
    func testWithinTheReuseGraceBothAnswersWorkAndUsingOneRetiresTheOther() throws {
        var state = try started()
        state = try refresh("r0", to: "r1", state: state, at: now, grace: 30)
        state = try refresh("r0", to: "r2", state: state, at: now + 10, grace: 30)  // the second of two concurrent refreshes
        XCTAssertNil(state.revoked)
        XCTAssertEqual(state.currentRefreshHash, "r2")
        XCTAssertEqual(state.alternateRefreshHash, "r1")
        // A third presentation of r0 is reuse, even within the grace: it revokes the family,
        // and r1 is refused after it.
        let third = try refresh("r0", to: "r9", state: state, at: now + 12, grace: 30)
        XCTAssertEqual(third.revoked, .reuse)
        let afterReuse = try refresh("r1", to: "rZ", state: third, at: now + 13, grace: 30)
        XCTAssertEqual(afterReuse.currentRefreshHash, third.currentRefreshHash)
        XCTAssertEqual(afterReuse.lastRefusalAt, now + 13)
        let usedFirst = try refresh("r1", to: "r3", state: state, at: now + 20, grace: 30)
        XCTAssertEqual(usedFirst.currentRefreshHash, "r3")
        XCTAssertNil(usedFirst.alternateRefreshHash)
        XCTAssertTrue(["r0", "r1", "r2"].allSatisfy(usedFirst.hasSpent), "r2 was retired when r1 was used")
        XCTAssertEqual(try refresh("r2", to: "r4", state: usedFirst, at: now + 21, grace: 30).revoked, .reuse)
        let usedSecond = try refresh("r2", to: "r3", state: state, at: now + 20, grace: 30)
        XCTAssertTrue(usedSecond.hasSpent("r1"), "or the other way round")
    }

    func testOutsideTheGraceOrWithoutItASpentTokenStillRevokes() throws {
        var state = try started()
        state = try refresh("r0", to: "r1", state: state, at: now, grace: 30)
        XCTAssertEqual(try refresh("r0", to: "r2", state: state, at: now + 31, grace: 30).revoked, .reuse)
        XCTAssertEqual(try refresh("r0", to: "r2", state: state, at: now + 1, grace: 0).revoked, .reuse, "the default is strict")
    }

    func testRefreshRotatesEveryTime() throws {
        var state = try started()
        for (generation, (old, new)) in [("r0", "r1"), ("r1", "r2"), ("r2", "r3")].enumerated() {
            state = try refresh(old, to: new, state: state).reduce(state, TokenFamily.evolve)
            XCTAssertEqual(state.generation, generation + 1)
            XCTAssertEqual(state.currentRefreshHash, new)
        }
        XCTAssertEqual(state.spentRefreshFingerprints.count, 3)
        XCTAssertTrue(["r0", "r1", "r2"].allSatisfy(state.hasSpent))
        XCTAssertFalse(state.hasSpent("r3"), "the current token is not spent")
    }

    func testReplayingASpentTokenRevokesTheWholeFamily() throws {
        var state = try started()
        state = try refresh("r0", to: "r1", state: state).reduce(state, TokenFamily.evolve)
        let replay = try refresh("r0", to: "rX", state: state)
        XCTAssertEqual(replay, [.revoked(TokenFamilyRevoked(reason: .reuse, presentedRefreshHash: "r0"))])
        state = replay.reduce(state, TokenFamily.evolve)
        XCTAssertEqual(
            try refresh("r1", to: "r2", state: state), [.refreshRefused(TokenFamilyRefreshRefused(reason: .revoked, revokedBecause: .reuse, refusedAt: now))])
    }

    func testStampChangeExpiryAndStrangersFail() throws {
        let state = try started()
        XCTAssertEqual(try refresh("r0", to: "r1", state: state, stamp: "s2"), [.revoked(TokenFamilyRevoked(reason: .stamp, presentedRefreshHash: nil))])
        XCTAssertEqual(try refresh("r0", to: "r1", state: state, stamp: nil), [.revoked(TokenFamilyRevoked(reason: .stamp, presentedRefreshHash: nil))])
        XCTAssertEqual(
            try refresh("r0", to: "r1", state: state, at: now + 15 * 86400),
            [.refreshRefused(TokenFamilyRefreshRefused(reason: .expired, refusedAt: now + 15 * 86400))])
        XCTAssertRefused("TokenFamily.UnknownRefreshToken") { _ = try refresh("nope", to: "r1", state: state) }
        let revoked = try TokenFamily.decide(.revoke(.logout), state: state, now: now).reduce(state, TokenFamily.evolve)
        XCTAssertEqual(try TokenFamily.decide(.revoke(.admin), state: revoked, now: now), [], "revoking twice is a no-op")
    }

    /// Issue 43: a dead family's refusals are recorded, at most one a minute: a client that
    /// retries in a loop cannot grow the log.
    func testRefusalsOfADeadFamilyAreRecordedAtMostOnceAMinute() throws {
        var state = try TokenFamily.decide(.revoke(.logout), state: try started(), now: now).reduce(try started(), TokenFamily.evolve)
        let first = try refresh("r0", to: "r1", state: state, at: now + 1)
        XCTAssertEqual(first, [.refreshRefused(TokenFamilyRefreshRefused(reason: .revoked, revokedBecause: .logout, refusedAt: now + 1))])
        state = first.reduce(state, TokenFamily.evolve)
        XCTAssertEqual(try refresh("r0", to: "r1", state: state, at: now + 59), [], "within the minute: nothing more")
        XCTAssertEqual(try refresh("r0", to: "r1", state: state, at: now + 61).count, 1, "a minute on: recorded again")
        XCTAssertEqual(state.currentRefreshHash, "r0", "a refusal never rotates")
    }
}

final class EventRoundTripTests: XCTestCase {
    /// Every event type is registered and reads back as written.
    func testEveryEventRoundTripsThroughTheRegistry() throws {
        let stream = StreamRef(type: "x", key: "1", realm: "demo")
        func roundTrip<E: AggregateEvent & Equatable>(_ event: E) throws -> E {
            let stored = try event.newEvent()
            let envelope = EventEnvelope(
                stream: stream, streamVersion: 1, type: stored.type, revision: stored.revision, payload: stored.payload, metadata: .none)
            return try E(decoding: envelope, registry: ModgudEvents.registry)
        }
        let realm: [RealmEvent] = [
            .created(RealmCreated(realmID: "demo", settings: RealmSettings(hosts: ["a.com"], displayName: "A"))),
            .settingsChanged(RealmSettingsChanged(settings: RealmSettings(hosts: ["b.com"], displayName: "B"))),
            .signingKeyRotated(SigningKeyRotated(kid: "k", algorithm: "ES256", publicJWK: "{}", rotatedAt: now)),
        ]
        for event in realm { XCTAssertEqual(try roundTrip(event), event) }
        let settings = ClientSettings(type: .public, grants: [.otp], allowedScopes: ["openid"])
        let client: [ClientEvent] = [
            .registered(ClientRegistered(clientID: "c", settings: settings, secretHash: nil)),
            .updated(ClientUpdated(settings: settings, previousRPID: "x.com")), .disabled(ClientDisabled()), .enabled(ClientEnabled()),
            .secretRotated(ClientSecretRotated(secretHash: "h")), .deleted(ClientDeleted()),
            .playIntegrityKeysSet(ClientPlayIntegrityKeysSet(packageName: "a.b", keys: PlayIntegrityKeys(sealedDecryptionKey: "s", verificationKey: "v"))),
            .playIntegrityKeysRemoved(ClientPlayIntegrityKeysRemoved(packageName: "a.b")),
        ]
        for event in client { XCTAssertEqual(try roundTrip(event), event) }
        let user: [UserEvent] = [
            .registered(
                UserRegistered(
                    userID: UUID(), email: .sealed(SealedText(box: [1, 2, 3], subject: "user:x")), emailConfirmed: true, username: .plain("u"),
                    firstName: nil, lastName: .plain("L"), securityStamp: "s", via: "admin")),
            .profileChanged(UserProfileChanged(username: nil, firstName: .plain("F"), lastName: nil)), .emailConfirmed(UserEmailConfirmed()),
            .totpEnabled(UserTOTPEnabled(encryptedSecret: "c")), .totpDisabled(UserTOTPDisabled()),
            .securityStampRotated(UserSecurityStampRotated(securityStamp: "s2", reason: .logoutEverywhere)), .disabled(UserDisabled()),
            .enabled(UserEnabled()), .deleted(UserDeleted()), .erased(UserErased()),
            .totpEnrollmentStarted(UserTOTPEnrollmentStarted(encryptedSecret: "p")), .totpStepAccepted(UserTOTPStepAccepted(step: 59_000_000)),
        ]
        for event in user { XCTAssertEqual(try roundTrip(event), event) }
        let family: [TokenFamilyEvent] = [
            .refreshed(
                TokenFamilyRefreshed(
                    spentRefreshHash: "a", refreshTokenHash: "b", refreshExpiresAt: now,
                    accessToken: IssuedAccessToken(hash: "h", expiresAt: now, format: .jwt), generation: 1)),
            .revoked(TokenFamilyRevoked(reason: .reuse, presentedRefreshHash: "a")),
        ]
        for event in family { XCTAssertEqual(try roundTrip(event), event) }
        let challenge: [EmailChallengeEvent] = [
            .issued(
                ChallengeIssued(
                    challengeID: UUID(), purpose: .registrationCode, email: .sealed(SealedText(box: [9], subject: "user:r")), registrantID: UUID(),
                    firstName: .plain("F"), secretHash: "h", issuedAt: now, expiresAt: now + 600)),
            .attemptFailed(ChallengeAttemptFailed(challengeID: UUID(), attempts: 2, reason: .wrongSecondFactor)),
            .burned(ChallengeBurned(challengeID: UUID())), .consumed(ChallengeConsumed(challengeID: UUID())),
        ]
        for event in challenge { XCTAssertEqual(try roundTrip(event), event) }
        let ceremony: [PasskeyCeremonyEvent] = [
            .begun(
                PasskeyCeremonyBegun(
                    ceremonyID: UUID(), kind: .enrollment, challenge: "c", rpID: "a.b", clientID: "ios", userID: UUID(), expiresAt: now)),
            .consumed(PasskeyCeremonyConsumed(ceremonyID: UUID())),
        ]
        for event in ceremony { XCTAssertEqual(try roundTrip(event), event) }
        let passkey: [PasskeyEvent] = [
            .enrolled(
                PasskeyEnrolled(
                    passkeyID: UUID(), userID: UUID(), credentialID: "id", rpID: "a.b", publicKey: "pk", algorithm: -8, signCount: 3, aaguid: "g",
                    backupEligible: true, backedUp: true, transports: ["hybrid", "internal"], attestationFormat: "packed", displayName: .plain("P"),
                    clientID: nil, createdAt: now)),
            .used(PasskeyUsed(signCount: 4, backedUp: true, usedAt: now)),
            .cloneSuspected(PasskeyCloneSuspected(storedSignCount: 4, receivedSignCount: 2)), .deleted(PasskeyDeleted(by: "admin:cli")),
        ]
        for event in passkey { XCTAssertEqual(try roundTrip(event), event) }
        let foreign = try realm[0].newEvent()
        let envelope = EventEnvelope(
            stream: stream, streamVersion: 1, type: foreign.type, revision: foreign.revision, payload: foreign.payload, metadata: .none)
        XCTAssertThrowsError(try ClientEvent(decoding: envelope, registry: ModgudEvents.registry)) { error in
            XCTAssertTrue(error is ForeignEventError, "a realm event is not a client's")
        }
    }
}

/// Issue 13: what counts as sealed text (its shape only) and what stays legacy plaintext.
final class PersonalTextTests: XCTestCase {
    func testSealedShapeAndLegacyPlaintext() throws {
        let sealed = SealedText(box: Array(0..<28), subject: "user:1")
        XCTAssertEqual(SealedText(stored: sealed.stored), sealed)
        XCTAssertEqual(SealedText(stored: sealed.stored)?.box, Array(0..<28))
        XCTAssertEqual(sealed.subject, "user:1")
        XCTAssertEqual(PersonalText(stored: sealed.stored), .sealed(sealed))
        for plain in ["ada@example.com", "pd1.", "pd1.abcd", "pd1.abcd.", "pd1..user:1", "pd1.ab+d.user:1", "pd1.abcde.user:1", "Pd1.abcd.user:1"] {
            XCTAssertEqual(PersonalText(stored: plain), .plain(plain), plain)
        }
        XCTAssertEqual(PersonalText.plain("Ada").description, "[personal data]", "never the plaintext in logs")
        XCTAssertEqual(PersonalText.sealed(sealed).description, "[sealed for user:1]")
        let encoded = try JSONEncoder().encode(["email": PersonalText.sealed(sealed)])
        XCTAssertEqual(try JSONDecoder().decode([String: PersonalText].self, from: encoded)["email"], .sealed(sealed))
    }
}

/// Issue 31: an operator's console actions that change no aggregate of their own.
final class OperatorLogTests: XCTestCase {
    func testActionsAreRecordedByNameAndBadNamesAreRefused() throws {
        let events = try OperatorLog.decide(.record(action: "projection.rebuild", target: "log_statistics"), state: OperatorLog.initialState, now: Date())
        XCTAssertEqual(events, [.recorded(OperatorActionRecorded(action: "projection.rebuild", target: "log_statistics"))])
        XCTAssertEqual(OperatorLog.replay(events + events).actions, 2)
        for (action, target) in [("", "x"), ("Projection", "x"), ("a b", "x"), ("ok", String(repeating: "t", count: 201)), ("ok", "nul\u{0}")] {
            XCTAssertThrowsError(try OperatorLog.decide(.record(action: action, target: target), state: OperatorLog.initialState, now: Date()), action)
        }
    }
}
