import EventSourcing
import Foundation
import ModgudDomain

/// Sign-in material for `modgud bench load`: the same challenge events the request endpoints
/// append (docs/spec.md sections 2 and 3), with the secret handed to the caller instead of mailed.
/// No HTTP route reaches this; it exists so a load test can redeem thousands of codes and
/// links without reading a mailbox.
public struct LoadFixtures: Sendable {
    /// Email codes (throws without the master key).
    let emailSignIn: @Sendable () throws -> EmailSignInService
    let challenges: AggregateRegistry<EmailChallenge>
    let secrets: ServerSecrets?
    let now: @Sendable () -> Date

    /// A registration code for an address without an account (the JIT sign-up of the OTP
    /// grant); returns the code.
    public func registrationCode(email: EmailAddress, realm: String, metadata: EventMetadata) async throws -> String {
        let secrets = try requireSecrets()
        let service = try emailSignIn()
        let code = OneTimeCode.generate()
        let time = now()
        let pending = try service.registrationChallenge(
            email: email, index: service.vault.blindIndex(email.value, realm: realm), realm: realm,
            secretHash: secrets.codes.hash(code, for: EmailSignInService.codeBinding(realm: realm, email: email)), time: time)
        _ = try await challenges.actor(for: service.codeStream(realm: realm, email: email, day: time))
            .execute(.issue(pending.issued, cooldown: EmailSignInService.resendCooldown), now: time, metadata: metadata, extra: { _ in [pending.key.insert] })
        return code
    }

    /// A magic link for an existing, confirmed user; returns the link's token.
    public func magicLink(userID: UUID, realm: String, metadata: EventMetadata) async throws -> String {
        let token = OpaqueToken.generate()
        let time = now()
        let issued = ChallengeIssued(
            challengeID: UUID(), purpose: .magicLink, userID: userID, secretHash: token.hash, issuedAt: time,
            expiresAt: time + EmailSignInService.linkLifetime)
        _ = try await challenges.actor(for: StreamNames.magicLinks(realm: realm, userID: userID))
            .execute(.issue(issued, cooldown: EmailSignInService.resendCooldown), now: time, metadata: metadata)
        return token.token
    }

    private func requireSecrets() throws -> ServerSecrets {
        guard let secrets else { throw MasterKeyMissing() }
        return secrets
    }
}
