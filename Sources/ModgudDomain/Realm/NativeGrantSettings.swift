/// The native passwordless grants switch and token lifetimes (docs/spec.md sections 1 and 5).
public struct NativeGrantSettings: Codable, Hashable, Sendable {
    public var enabled: Bool
    /// Access-token lifetime in minutes, 1–60 (default 15).
    public var accessTokenLifetimeMinutes: Int
    /// Refresh-token lifetime in days, 1–30 (default 14).
    public var refreshTokenLifetimeDays: Int

    public init(enabled: Bool = false, accessTokenLifetimeMinutes: Int = 15, refreshTokenLifetimeDays: Int = 14) {
        self.enabled = enabled
        self.accessTokenLifetimeMinutes = accessTokenLifetimeMinutes
        self.refreshTokenLifetimeDays = refreshTokenLifetimeDays
    }

    /// The valid access-token lifetimes, minutes (forms take their bounds from here).
    public static let accessTokenLifetimeRange = 1...60
    /// The valid refresh-token lifetimes, days.
    public static let refreshTokenLifetimeRange = 1...30

    public func validate() throws(DomainError) {
        guard Self.accessTokenLifetimeRange.contains(accessTokenLifetimeMinutes) else {
            throw DomainError("NativeGrants.InvalidAccessTokenLifetime", "The access-token lifetime must be 1 to 60 minutes.")
        }
        guard Self.refreshTokenLifetimeRange.contains(refreshTokenLifetimeDays) else {
            throw DomainError("NativeGrants.InvalidRefreshTokenLifetime", "The refresh-token lifetime must be 1 to 30 days.")
        }
    }
}
