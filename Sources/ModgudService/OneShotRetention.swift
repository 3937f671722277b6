import EventStorePostgres
import ModgudDomain
import PQ

extension LogRetention {
    /// The product's one-shot streams: passkey ceremonies (5 minutes) and email challenges
    /// (codes 10 minutes, links 15 minutes), the day streams of tripped rate limits, and first-party
    /// authorization sessions and device authorizations (10 minutes).
    /// Retention counts from a stream's last event.
    public static let oneShotStreamTypes = [
        PasskeyCeremony.streamType, EmailChallenge.streamType, RateLimitLog.streamType, AuthorizationSession.streamType,
        DeviceAuthorization.streamType,
    ]

    /// Retention of the product's one-shot streams (default 30 days).
    public static func oneShotStreams(pool: PQPool, maxAge: Duration = .seconds(30 * 86_400)) -> LogRetention {
        LogRetention(pool: pool, streamTypes: oneShotStreamTypes, maxAge: maxAge)
    }
}
