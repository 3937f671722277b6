import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// Confirming a signed-up user's address (issue 14): `POST /api/account/email/confirm/request`
/// sends a code to the account's address, `POST /api/account/email/confirm` redeems it. Both
/// need the user's bearer token. A passkey sign-up's address is unconfirmed until then, and
/// until then the address's owner can take it back (`retirementOfUnprovenAccount`).
///
/// The code follows the sign-in code's rules (docs/spec.md section 2): 6 digits, 10 minutes, three
/// wrong tries burn it, single use, a silent 2-minute resend cooldown; it lives in the user's
/// own stream, so the user's confirmation and the consumed code commit together.
extension EmailSignInService {
    /// What a confirmation request did.
    public enum ConfirmationRequestOutcome: Sendable, Equatable {
        /// A code is on its way (or one went out within the cooldown).
        case sent
        /// The address is confirmed already: nothing was sent.
        case alreadyConfirmed
        /// The account stopped signing in (disabled, deleted, erased): nothing was sent.
        case accountCannotSignIn
    }

    /// Sends a confirmation code to the user's address. - Throws: `RateLimited`.
    public func requestConfirmation(realm: RealmDirectory.Entry, userID: UUID, source: String, metadata: EventMetadata) async throws
        -> ConfirmationRequestOutcome
    {
        let user = try await userActors.actor(for: StreamNames.user(realm: realm.realmID, userID: userID)).current().state
        guard user.canSignIn else { return .accountCannotSignIn }
        guard !user.emailConfirmed else { return .alreadyConfirmed }
        try await limiter.check(.requestPerIP, key: source, realm: realm.realmID, settings: realm.settings)
        guard let address = try await vault.open(user.email).flatMap(EmailAddress.init) else { return .accountCannotSignIn }
        try await limiter.check([RateLimitBucket(.requestPerMailbox, key: mailboxKey(address.value), mailbox: address.value)], realm: realm.realmID, settings: realm.settings)
        let time = now()
        let code = OneTimeCode.generate()
        let issued = ChallengeIssued(
            challengeID: UUID(), purpose: .emailConfirmation, userID: userID,
            secretHash: secrets.codes.hash(code, for: Self.confirmationBinding(realm: realm.realmID, userID: userID)), issuedAt: time,
            expiresAt: time + Self.codeLifetime)
        let mail = try await outbox.enqueue(
            MailTemplates.code(code, to: address.value, realmName: realm.settings.displayName, registration: false, confirmation: true),
            realm: realm.realmID, sealing: .subject(PersonalDataVault.userSubject(userID)))
        let outcome = try await challengeActors.actor(for: StreamNames.emailConfirmation(realm: realm.realmID, userID: userID))
            .execute(.issue(issued, cooldown: Self.resendCooldown), now: time, metadata: metadata, extra: { _ in [mail] })
        if !outcome.events.isEmpty { mailEnqueued() }
        return .sent
    }

    /// Redeems a confirmation code: true when the address is confirmed (now or before), false
    /// for a wrong, expired, burned or used code.
    public func confirm(realm: String, userID: UUID, code: String, metadata: EventMetadata, attempt: Int = 1) async throws -> Bool {
        let userStream = StreamNames.user(realm: realm, userID: userID)
        let (user, userVersion) = try await userActors.actor(for: userStream).current()
        guard user.canSignIn else { return false }
        if user.emailConfirmed { return true }
        guard code.count == 6, code.allSatisfy(\.isASCII), code.allSatisfy(\.isNumber) else { return false }
        let hash = secrets.codes.hash(code, for: Self.confirmationBinding(realm: realm, userID: userID))
        let confirmed = try User.decide(.confirmEmail, state: user, now: now()).map { try $0.newEvent() }
        do {
            let outcome = try await challengeActors.actor(for: StreamNames.emailConfirmation(realm: realm, userID: userID)).execute(
                .redeem(presentedHash: hash), now: now(), metadata: metadata,
                alsoAppending: { events in
                    guard events.contains(where: { if case .consumed = $0 { true } else { false } }) else { return [] }
                    return [StreamWrite(stream: userStream, expected: ExpectedVersion(current: userVersion), events: confirmed)]
                })
            return outcome.events.contains { if case .consumed = $0 { true } else { false } }
        } catch is DomainError {
            return false
        } catch EventStoreError.wrongExpectedVersion where attempt < 3 {
            // The user changed meanwhile (nothing written, the code still live): once more.
            return try await confirm(realm: realm, userID: userID, code: code, metadata: metadata, attempt: attempt + 1)
        }
    }

    /// A confirmation code is bound to its realm and user.
    static func confirmationBinding(realm: String, userID: UUID) -> String { "confirm\u{0}\(realm)\u{0}\(userID.uuidString.lowercased())" }
}
