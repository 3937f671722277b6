import Foundation
import ModgudDomain

/// A realm's token and session lifetimes (docs/configuration.md, "Realm settings"), read from
/// its settings once per request.
struct TokenLifetimes: Sendable {
    var access: TimeInterval
    var refresh: TimeInterval
    /// The absolute session lifetime: no refresh outlives the sign-in by more.
    var session: TimeInterval
    /// How long a just-rotated refresh token is accepted again (a lost response's retry).
    var reuseGrace: TimeInterval

    init(_ settings: RealmSettings) {
        access = TimeInterval(settings.nativeGrants.accessTokenLifetimeMinutes * 60)
        refresh = TimeInterval(settings.nativeGrants.refreshTokenLifetimeDays * 86400)
        session = TimeInterval(settings.sessionLimits.absoluteLifetimeDays * 86400)
        reuseGrace = TimeInterval(settings.sessionLimits.refreshReuseGraceSeconds)
    }
}
