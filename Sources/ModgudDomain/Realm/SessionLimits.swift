/// A sign-in's limits (docs/spec.md sections 1 and 5).
public struct SessionLimits: Codable, Hashable, Sendable {
    /// A refresh-token family is refused this many days after its sign-in, however often it
    /// was refreshed (default 90, valid 1–3650): rotation slides, this does not.
    public var absoluteLifetimeDays: Int
    /// Seconds after a rotation in which the refresh token just spent may be presented once
    /// more without revoking the family (default 0: strict, valid 0–300). See docs/configuration.md.
    public var refreshReuseGraceSeconds: Int
    /// How recent a sign-in must be for its access token to enroll a passkey (default 10,
    /// valid 1–1440 minutes; issue 14). A token with `PasskeyEnrollment.scope` may enroll
    /// whatever its age. A stolen token is thus not a permanent way into the account.
    public var enrollmentFreshnessMinutes: Int

    public init(absoluteLifetimeDays: Int = 90, refreshReuseGraceSeconds: Int = 0, enrollmentFreshnessMinutes: Int = 10) {
        self.absoluteLifetimeDays = absoluteLifetimeDays
        self.refreshReuseGraceSeconds = refreshReuseGraceSeconds
        self.enrollmentFreshnessMinutes = enrollmentFreshnessMinutes
    }

    private enum CodingKeys: String, CodingKey {
        case absoluteLifetimeDays, refreshReuseGraceSeconds, enrollmentFreshnessMinutes
    }

    /// Settings recorded before a member existed decode with its default.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        absoluteLifetimeDays = try container.decodeIfPresent(Int.self, forKey: .absoluteLifetimeDays) ?? 90
        refreshReuseGraceSeconds = try container.decodeIfPresent(Int.self, forKey: .refreshReuseGraceSeconds) ?? 0
        enrollmentFreshnessMinutes = try container.decodeIfPresent(Int.self, forKey: .enrollmentFreshnessMinutes) ?? 10
    }

    /// The valid absolute lifetimes, days (forms take their bounds from here).
    public static let absoluteLifetimeRange = 1...3650
    /// The valid reuse graces, seconds.
    public static let reuseGraceRange = 0...300
    /// The valid enrollment freshness, minutes.
    public static let enrollmentFreshnessRange = 1...1440

    public func validate() throws(DomainError) {
        guard Self.absoluteLifetimeRange.contains(absoluteLifetimeDays) else {
            throw DomainError("Session.InvalidAbsoluteLifetime", "The absolute session lifetime must be 1 to 3650 days.")
        }
        guard Self.reuseGraceRange.contains(refreshReuseGraceSeconds) else {
            throw DomainError("Session.InvalidReuseGrace", "The refresh reuse grace must be 0 to 300 seconds.")
        }
        guard Self.enrollmentFreshnessRange.contains(enrollmentFreshnessMinutes) else {
            throw DomainError("Session.InvalidEnrollmentFreshness", "The enrollment freshness must be 1 to 1440 minutes.")
        }
    }
}
