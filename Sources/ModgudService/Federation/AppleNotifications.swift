import EventSourcing
import Foundation
import JWTKit
import ModgudDomain
import PQ

/// Sign in with Apple's server-to-server notifications (issue 48; Apple's "Processing changes
/// for Sign in with Apple accounts"): Apple posts `{"payload": "<JWS>"}` to the endpoint the
/// team registered for its Services ID. The JWS is signed with Apple's ID token keys; its
/// `events` claim is a JSON *string* `{"type", "sub", "email"?, "is_private_email"?,
/// "event_time"}`, with `type` one of:
///
/// - `consent-revoked`: the person stopped using Sign in with Apple with the app;
/// - `account-delete` (`account-deleted` in some of Apple's pages): the Apple Account is gone;
/// - `email-disabled`, `email-enabled`: mail forwarding to the private relay address stopped
///   or resumed.
///
/// The first two unlink that Apple account from its user (`user.identity_unlinked` with the
/// type as the reason) and end the sessions it signed in (`token_family.revoked`,
/// `provider_revoked`); the person's other ways in and sessions stay. The mail ones are
/// acknowledged and change nothing: Modgud keeps writing to the relay address, which Apple
/// drops while forwarding is off. A notification is applied once (its `jti`, across instances).
public struct AppleNotifications: Sendable {
    let signIn: FederatedSignIn

    public init(signIn: FederatedSignIn) {
        self.signIn = signIn
    }

    /// What a notification did.
    public enum Outcome: String, Sendable, Equatable {
        /// The Apple account was unlinked and its sessions ended.
        case unlinked
        /// Acknowledged: a mail event, an account linked to nobody, an unknown type.
        case acknowledged
        /// Applied before (Apple retries until it gets a 200).
        case duplicate
    }

    /// Verifies `payload` with the keys of the realm's Apple provider whose audiences hold its
    /// `aud`, and applies it. Refusals are `FederationError.refused` (`malformed`, `issuer`,
    /// `audience`, `signature`, `expired`, `issued_in_future`).
    public func receive(_ payload: String, realm: String, settings: RealmSettings, metadata: EventMetadata) async throws -> (Outcome, AppleNotificationClaims.Event) {
        let apple = (settings.federatedProviders ?? []).filter { $0.kind == .apple }
        guard !apple.isEmpty else { throw FederationError.refused(reason: "issuer", detail: "this realm has no Apple provider") }
        let audience = try AppleNotificationClaims.unverifiedAudience(payload)
        guard let provider = apple.first(where: { !Set(audience).isDisjoint(with: $0.audiences) }) else {
            throw FederationError.refused(reason: "audience", detail: "no Apple provider of this realm accepts this notification's aud")
        }
        let claims = try await signIn.federation.verifier.signed(payload, by: provider, as: AppleNotificationClaims.self)
        let event = try claims.checked(provider: provider, now: signIn.now(), skew: signIn.federation.verifier.skew)
        let until = claims.iat.value.addingTimeInterval(2 * AppleNotificationClaims.maxAge)
        guard try await signIn.pool.query(DPoPReplayTable.claim(jkt: "apple-notification", jti: claims.jti, now: signIn.now(), until: until)).first != nil
        else { return (.duplicate, event) }
        guard event.type == "consent-revoked" || event.type == "account-delete" || event.type == "account-deleted",
            let userID = try await signIn.linkedUser(realm: realm, provider: provider.id, subject: event.sub)
        else { return (.acknowledged, event) }
        try await signIn.unlink(realm: realm, userID: userID, provider: provider.id, reason: event.type, endingSessions: true, metadata: metadata)
        return (.unlinked, event)
    }
}
