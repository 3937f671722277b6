import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// Proof of the mailbox wins (issue 14). A passkey sign-up makes an account whose address
/// nobody has proven. Until its holder proves it (`EmailConfirmation`), the address's owner can
/// take the address back: a registration code for it retires that account and its passkeys in
/// the transaction that creates the owner's clean account. So someone who signs up with
/// another person's address holds nothing the owner cannot take back by reading their mail.
extension EmailSignInService {
    /// The writes that retire the unproven passkey sign-up holding `email`, with the versions
    /// they were decided on (a change meanwhile fails the whole transaction: nothing written,
    /// the code still live). Empty when the address has no such account.
    func retirementOfUnprovenAccount(realm: String, email: EmailAddress) async throws -> [StreamWrite] {
        guard
            let userID = try await UsersTable.userID(
                realm: realm, email: email, index: vault.blindIndex(email.value, realm: realm), pool: pool)
        else { return [] }
        let userStream = StreamNames.user(realm: realm, userID: userID)
        let (user, userVersion) = try await userActors.actor(for: userStream).current()
        guard user.isUnprovenPasskeySignUp else { return [] }
        let time = now()
        var writes = [
            StreamWrite(
                stream: userStream, expected: ExpectedVersion(current: userVersion),
                events: try User.decide(.retireUnproven(newStamp: OpaqueToken.generate().hash), state: user, now: time).map { try $0.newEvent() })
        ]
        let passkeyIDs = try await PasskeysTable(pool: pool).ids(realm: realm, userID: userID)
        for passkeyID in passkeyIDs {
            let stream = StreamNames.passkey(realm: realm, passkeyID: passkeyID)
            let (passkey, version) = try await passkeyActors.actor(for: stream).current()
            guard passkey.isActive else { continue }
            let events = try Passkey.decide(.delete(by: Self.retiredBy), state: passkey, now: time)
            writes.append(StreamWrite(stream: stream, expected: ExpectedVersion(current: version), events: try events.map { try $0.newEvent() }))
        }
        return writes
    }

    /// The actor recorded on passkeys deleted because another person proved the mailbox.
    static let retiredBy = "mailbox-proof"
}
