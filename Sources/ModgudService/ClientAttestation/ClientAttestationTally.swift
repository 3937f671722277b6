import Foundation
import PQ
import Synchronization

/// How many requests each client made attested, unattested, or refused (issue 47), counted by
/// each instance in memory and added to `client_attestation_counts` by `flush()` (every
/// maintenance tick and at shutdown), so a request pays one dictionary update for it. The
/// console and `modgud client show` read the table: the figures of every instance, behind by
/// at most one tick.
public final class ClientAttestationTally: Sendable {
    /// What the gate decided for one request of a client whose attestation is not `off`.
    public enum Outcome: String, Sendable, CaseIterable {
        /// A valid attestation and PoP.
        case attested
        /// Served without an attestation (the client is `allowed`): what `required` would refuse.
        case unattested
        /// Refused: no attestation where one is required, or one that failed a check.
        case refused
    }

    /// One client's figures.
    public struct Counts: Sendable, Equatable {
        public var attested = 0
        public var unattested = 0
        public var refused = 0

        public init(attested: Int = 0, unattested: Int = 0, refused: Int = 0) {
            self.attested = attested
            self.unattested = unattested
            self.refused = refused
        }
    }

    struct Key: Hashable, Sendable {
        var realm: String
        var clientID: String
        var outcome: Outcome
    }

    let pool: PQPool
    let clock: @Sendable () -> Date
    private let pending = Mutex<[Key: Int]>([:])

    public init(pool: PQPool, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.pool = pool
        self.clock = clock
    }

    /// Counts one request. A request that names no client is not counted (there is no client
    /// to count it for).
    public func record(realm: String, clientID: String, _ outcome: Outcome) {
        guard !clientID.isEmpty else { return }
        pending.withLock { $0[Key(realm: realm, clientID: clientID, outcome: outcome), default: 0] += 1 }
    }

    /// Adds this instance's counts to the table. Counts a failed write could not add are kept
    /// for the next flush (the database may be away).
    public func flush() async throws {
        let taken = pending.withLock { counts in
            defer { counts = [:] }
            return counts
        }
        var remaining = taken
        do {
            for (key, count) in taken {
                try await pool.query(
                    ClientAttestationCountsTable.add(realm: key.realm, clientID: key.clientID, outcome: key.outcome.rawValue, count: count, now: clock()))
                remaining[key] = nil
            }
        } catch {
            pending.withLock { counts in counts.merge(remaining, uniquingKeysWith: +) }
            throw error
        }
    }

    /// Every client's figures in `realm`, as the table has them.
    static func counts(realm: String, pool: PQPool) async throws -> [String: Counts] {
        var result: [String: Counts] = [:]
        for row in try await ClientAttestationCountsTable.counts(realm: realm, pool: pool) {
            switch Outcome(rawValue: row.outcome) {
            case .attested: result[row.clientID, default: Counts()].attested = row.count
            case .unattested: result[row.clientID, default: Counts()].unattested = row.count
            case .refused: result[row.clientID, default: Counts()].refused = row.count
            case nil: continue
            }
        }
        return result
    }
}
