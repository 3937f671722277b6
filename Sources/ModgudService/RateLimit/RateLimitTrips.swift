import EventSourcing
import Foundation
import Logging
import Metrics
import ModgudDomain
import Synchronization

/// Records tripped rate limits in the log (`RateLimitLog`), off the refused request's path:
/// the 429 is answered at once and the event is appended by a task of its own. At most
/// `maxInFlight` records are being written at once; past that a trip is dropped and counted
/// (`modgud_rate_limit_trips_dropped_total`): a flood of trips is itself the attack the
/// metrics and the access log already show.
final class RateLimitTrips: Sendable {
    /// One bucket's first refusal in a `RateLimitLog.tripInterval`.
    struct Trip: Sendable {
        var realm: String
        var policy: String
        /// The bucket's stored key (a keyed hash), naming the day's stream.
        var bucket: String
        var retryAfterSeconds: Int
        /// The counted address, to name its account (never stored).
        var mailbox: String?
        var origin: RequestOrigin?
    }

    static let maxInFlight = 64

    private let log: AggregateRegistry<RateLimitLog>
    /// The account of an address in a realm, if any (the vault's blind index; nil without it).
    private let accountOf: @Sendable (_ realm: String, _ address: String) async throws -> UUID?
    private let now: @Sendable () -> Date
    private let inFlight = Atomic<Int>(0)
    private static let logger = Logger(label: "modgud.ratelimit")

    init(log: AggregateRegistry<RateLimitLog>, accountOf: @escaping @Sendable (String, String) async throws -> UUID?, now: @escaping @Sendable () -> Date) {
        self.log = log
        self.accountOf = accountOf
        self.now = now
    }

    /// Starts recording a trip; returns at once.
    func note(_ trip: Trip) {
        guard inFlight.add(1, ordering: .relaxed).newValue <= Self.maxInFlight else {
            inFlight.subtract(1, ordering: .relaxed)
            Counter(label: "modgud_rate_limit_trips_dropped_total").increment()
            return
        }
        Task {
            defer { inFlight.subtract(1, ordering: .relaxed) }
            await record(trip)
        }
    }

    /// Appends the trip's event.
    func record(_ trip: Trip) async {
        do {
            var userID: UUID?
            if let mailbox = trip.mailbox { userID = try await accountOf(trip.realm, mailbox) }
            let time = now()
            let stream = StreamNames.rateLimitLog(realm: trip.realm, policy: trip.policy, bucket: trip.bucket, day: PersonalDataVault.dayText(time))
            _ = try await log.actor(for: stream).execute(
                .recordTrip(policy: trip.policy, retryAfterSeconds: trip.retryAfterSeconds, userID: userID), now: time,
                metadata: trip.origin?.metadata ?? EventMetadata())
        } catch {
            Self.logger.warning("a tripped rate limit was not recorded", metadata: ["policy": "\(trip.policy)", "error": "\(error)"])
        }
    }
}
