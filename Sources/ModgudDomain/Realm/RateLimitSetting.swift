/// One rate limit: `limit` requests per `windowSeconds`, with a burst allowance; optionally
/// log-only (counts and records would-be rejections, rejects nothing) and with an allowlist of
/// source ranges that are never limited.
public struct RateLimitSetting: Codable, Hashable, Sendable {
    public var limit: Int
    public var windowSeconds: Int
    public var burst: Int
    /// true: record what would be rejected, reject nothing (absent in older settings: false).
    public var logOnly: Bool?
    /// Source ranges (CIDR) this policy never limits.
    public var allowlist: [String]?

    public init(limit: Int, windowSeconds: Int, burst: Int, logOnly: Bool? = nil, allowlist: [String]? = nil) {
        self.limit = limit
        self.windowSeconds = windowSeconds
        self.burst = burst
        self.logOnly = logOnly
        self.allowlist = allowlist
    }

    /// Whether a source key falls in the allowlist.
    public func allows(sourceKey: String) -> Bool {
        (allowlist ?? []).contains { SourceCIDR($0)?.contains(sourceKey: sourceKey) == true }
    }
}
