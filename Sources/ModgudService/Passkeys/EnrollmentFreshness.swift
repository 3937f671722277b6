import Foundation
import ModgudDomain

/// A fresh sign-in (issue 14): the bearer token's sign-in
/// (`auth_time`, kept by its token family) must be at most the realm's
/// `SessionLimits.enrollmentFreshnessMinutes` old (default 10), or the token must carry
/// `enrollmentScope`. Otherwise a stolen access token (or a refreshed session weeks old)
/// could plant a permanent way into the account. Always asked before recovery codes are made
/// and a provider account is unlinked (neither is in the guides); asked before a passkey
/// change only when the realm turns on `AccountGuards.passkeyStepUp` (issue 65).
extension PasskeyService {
    /// The scope that lets a token enroll whatever its sign-in's age; a client must be allowed
    /// it (`allowedScopes`) like any other.
    public static let enrollmentScope = "modgud:passkeys:enroll"

    /// Refuses unless the sign-in is fresh or the scope is granted: 401 with RFC 9470's
    /// `insufficient_user_authentication` challenge (`max_age` = the freshness in seconds) and
    /// the problem `Passkey.ReauthenticationRequired` (its code kept, issue 46; it was a 403).
    public func requireFreshSignIn(realm: RealmDirectory.Entry, familyID: UUID, scopes: [String]) async throws {
        if scopes.contains(Self.enrollmentScope) { return }
        let family = try await families.actor(for: StreamNames.tokenFamily(realm: realm.realmID, familyID: familyID)).current().state
        let limit = TimeInterval(realm.settings.sessionLimits.enrollmentFreshnessMinutes * 60)
        guard let signedIn = family.started?.authTime, now().timeIntervalSince(signedIn) <= limit else {
            throw ServiceRefusal(
                .insufficientUserAuthentication(maxAge: realm.settings.sessionLimits.enrollmentFreshnessMinutes * 60),
                "Passkey.ReauthenticationRequired",
                "Sign in again to add a passkey: the sign-in must be at most \(realm.settings.sessionLimits.enrollmentFreshnessMinutes) minutes old.")
        }
    }

    /// Changing a person's passkeys (enroll, rename, delete, in both APIs) when the realm turned
    /// on `AccountGuards.passkeyStepUp` (issue 65: off by default, as the native-app guide
    /// promises these calls with any valid token): then `requireFreshSignIn`, else nothing.
    public func requirePasskeyStepUp(realm: RealmDirectory.Entry, familyID: UUID, scopes: [String]) async throws {
        guard realm.settings.accountGuards.passkeyStepUp else { return }
        try await requireFreshSignIn(realm: realm, familyID: familyID, scopes: scopes)
    }

    /// Whether `amr` is a passkey's (RFC 8176 `hwk`/`swk`; `passkey` before issue 46).
    static func isPasskeySignIn(_ amr: [String]) -> Bool {
        amr.contains("hwk") || amr.contains("swk") || amr.contains("passkey")
    }

    /// How soon after the sign-in an automatic upgrade may begin.
    public static let upgradeWindow: TimeInterval = 5 * 60

    /// An automatic upgrade (conditional create, issue 46) follows a sign-in by another factor
    /// (an email code or link) within `upgradeWindow`, whatever the token's scopes: the
    /// registration it allows asserts no user presence, so only the moment right after a proven
    /// sign-in may ask for one. Otherwise 403 `Passkey.UpgradeNotAllowed`.
    public func requireUpgradeSignIn(realm: RealmDirectory.Entry, familyID: UUID) async throws {
        let family = try await families.actor(for: StreamNames.tokenFamily(realm: realm.realmID, familyID: familyID)).current().state
        guard let started = family.started, !Self.isPasskeySignIn(started.amr), now().timeIntervalSince(started.authTime) <= Self.upgradeWindow else {
            throw ServiceRefusal.forbidden(
                "Passkey.UpgradeNotAllowed", "An automatic passkey upgrade follows a sign-in by email code or link within 5 minutes.")
        }
    }
}
