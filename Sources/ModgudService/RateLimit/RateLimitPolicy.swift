import ModgudDomain

/// A named limit on one dimension of requests (docs/spec.md section 0). The name is what a realm
/// overrides (`rateLimitOverrides["otp-request.ip"]`) and what a 429 reports.
public struct RateLimitPolicy: Sendable, Hashable {
    /// The family (`otp-request`, `token`, `passkey`, `signup`).
    public var policy: String
    /// What is counted (`ip`, `mailbox`, `client`).
    public var dimension: String
    public var defaultSetting: RateLimitSetting

    public var name: String { "\(policy).\(dimension)" }

    /// Whether its buckets survive a crash and a failover (issue 67): the per-mailbox caps, which
    /// protect a person, live in the logged `rate_limits_durable`; the per-source and per-client
    /// brakes, counted on every grant, in the UNLOGGED `rate_limits` (migration 0027).
    public var durable: Bool { dimension == "mailbox" }

    /// The limit a realm applies: its override, else the default.
    public func setting(in realm: RealmSettings) -> RateLimitSetting {
        realm.rateLimitOverrides[name] ?? defaultSetting
    }

    // docs/spec.md section 0 defaults.
    public static let requestPerIP = RateLimitPolicy(policy: "otp-request", dimension: "ip", defaultSetting: .init(limit: 1200, windowSeconds: 3600, burst: 300))
    public static let requestPerMailbox = RateLimitPolicy(policy: "otp-request", dimension: "mailbox", defaultSetting: .init(limit: 5, windowSeconds: 3600, burst: 5))
    /// Silent: past it, sign-up requests are answered as usual but create nothing (a 429 would be an oracle).
    /// Counted per IPv4 address or IPv6 /64. One IPv4 address behind a carrier NAT can be
    /// thousands of subscribers, so the default admits a launch day's sign-ups from one
    /// address (300 an hour, 100 at once) while capping what one source can make the service
    /// mail to new addresses; each address is further capped by `otp-request.mailbox`.
    public static let signupPerIP = RateLimitPolicy(policy: "signup", dimension: "ip", defaultSetting: .init(limit: 300, windowSeconds: 3600, burst: 100))
    public static let tokenPerIP = RateLimitPolicy(policy: "token", dimension: "ip", defaultSetting: .init(limit: 600, windowSeconds: 60, burst: 200))
    /// Per client id across every source: a circuit breaker, high enough that a public app
    /// with 100,000 users refreshing every 15 minutes (about 110 grants/s) never meets it.
    public static let tokenPerClient = RateLimitPolicy(
        policy: "token", dimension: "client", defaultSetting: .init(limit: 60_000, windowSeconds: 60, burst: 20_000))
    /// Per (public client, source /64): one device or one abusive network cannot spend the
    /// budget of the app's other installations. A device refreshes a few times an hour.
    public static let tokenPerClientSource = RateLimitPolicy(
        policy: "token", dimension: "client-source", defaultSetting: .init(limit: 120, windowSeconds: 60, burst: 60))
    /// Every policy, by name: what operators may override (`RealmSettings.rateLimitOverrides`).
    public static var all: [RateLimitPolicy] {
        [requestPerIP, requestPerMailbox, signupPerIP, tokenPerIP, tokenPerClient, tokenPerClientSource, passkeyPerIP, recoveryPerMailbox, recoveryPerIP,
            attestationPerIP, deviceUserCodePerIP, deviceUserCodePerRealm]
    }

    public static func named(_ name: String) -> RateLimitPolicy? {
        all.first { $0.name == name }
    }

    /// Recovery code attempts per address (issue 46), like codes per mailbox: counted by the
    /// address's peppered hash whether or not it has an account, so a 429 tells nothing.
    public static let recoveryPerMailbox = RateLimitPolicy(
        policy: "recovery-code", dimension: "mailbox", defaultSetting: .init(limit: 10, windowSeconds: 3600, burst: 5))
    /// Recovery code redemptions and new sets per source: each costs slow hashes (one, or
    /// ten), so one network cannot spend the service's CPU on them.
    public static let recoveryPerIP = RateLimitPolicy(
        policy: "recovery-code", dimension: "ip", defaultSetting: .init(limit: 120, windowSeconds: 3600, burst: 30))
    /// Platform evidence verified by the attester per source (issue 47): each costs a
    /// certificate chain's signatures or a decryption, so one network cannot spend the service's
    /// CPU on them. An app instance attests once and renews about hourly; the default admits a
    /// carrier NAT's worth of them.
    public static let attestationPerIP = RateLimitPolicy(
        policy: "attestation", dimension: "ip", defaultSetting: .init(limit: 3600, windowSeconds: 3600, burst: 300))
    /// User codes typed per source (RFC 8628 section 5.1, issue 69): a person types one or two;
    /// every lookup counts, found or not, so one network gets 60 guesses an hour at a space of
    /// 20^8 codes.
    public static let deviceUserCodePerIP = RateLimitPolicy(
        policy: "device.user-code", dimension: "ip", defaultSetting: .init(limit: 60, windowSeconds: 3600, burst: 10))
    /// User codes typed per realm, across every source: the brake on a botnet's guessing. With
    /// 1,000 live codes, 6,000 guesses an hour find one with probability 6,000 × 1,000 / 20^8 ≈
    /// 2.3 × 10^-4 per hour (docs/guides/device-grant.md, "Guessing").
    public static let deviceUserCodePerRealm = RateLimitPolicy(
        policy: "device.user-code", dimension: "realm", defaultSetting: .init(limit: 6000, windowSeconds: 3600, burst: 600))
    public static let passkeyPerIP = RateLimitPolicy(policy: "passkey", dimension: "ip", defaultSetting: .init(limit: 1200, windowSeconds: 300, burst: 300))
}

/// A request over its limit: 429 with `Retry-After`.
public struct RateLimited: Error, Sendable, Equatable {
    public var policy: String
    public var dimension: String
    public var retryAfterSeconds: Int
    /// The policy's limit per window (what Auth0's `X-RateLimit-Limit` header states).
    public var limit: Int = 0
}
