import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// A year of refreshes in minutes, for `modgud bench scale` (issue 70): signed-in sessions
/// aged by many rotations each. No HTTP route reaches this.
///
/// The bulk path is documented and produces the rows the request path does: each rotation is
/// decided by `TokenFamily.decide` from the family's state (as `TokenService.refresh` has the
/// family's actor decide it), and the events go through the store's own append, inline
/// projections included, several families to one transaction. What it skips is what a
/// refresh does around the decision (minting and signing the tokens, whose hashes it draws
/// at random instead) and one transaction per rotation.
public struct SessionHistory: Sendable {
    let pool: PQPool
    let store: PostgresEventStore
    let families: AggregateRegistry<TokenFamily>
    let now: @Sendable () -> Date

    /// Ages each session (its refresh token) by `rotations` refreshes, `spacing` apart and
    /// ending now; the families are appended in one transaction. Returns the new refresh
    /// tokens, in order, and the number of events appended.
    public func age(_ refreshTokens: [String], realm: String, rotations: Int, spacing: TimeInterval = 900, metadata: EventMetadata)
        async throws -> (tokens: [String], events: Int)
    {
        var writes: [StreamWrite] = []
        var current: [String] = []
        for token in refreshTokens {
            let lookup = TokenTables.refreshLookupQuery(presentedHash: OpaqueToken.hash(token), realm: realm)
            guard let found = try TokenTables.refreshLookup(try await pool.query(lookup)) else { throw SessionHistoryError.unknownToken }
            let stream = StreamNames.tokenFamily(realm: realm, familyID: found.familyID)
            let (state, version) = try await families.actor(for: stream).current()
            let (events, last) = try Self.rotations(of: state, count: rotations, spacing: spacing, endingAt: now())
            writes.append(StreamWrite(stream: stream, expected: ExpectedVersion(current: version), events: try events.map { try $0.newEvent() }))
            current.append(last)
        }
        _ = try await store.append(writes, metadata: metadata)
        return (current, writes.reduce(0) { $0 + $1.events.count })
    }

    /// `count` refreshes of a family, decided one after another on the evolving state: the
    /// events, and the refresh token the last one issued.
    static func rotations(of family: TokenFamily.State, count: Int, spacing: TimeInterval, endingAt end: Date) throws
        -> (events: [TokenFamilyEvent], token: String)
    {
        guard let started = family.started, var presented = family.currentRefreshHash else { throw SessionHistoryError.unknownToken }
        var (state, events, token) = (family, [TokenFamilyEvent](), "")
        for index in 0..<count {
            let time = end - Double(count - 1 - index) * spacing
            let next = OpaqueToken.generate()
            let access = IssuedAccessToken(hash: OpaqueToken.generate().hash, expiresAt: time + 900, format: started.accessToken.format)
            let decided = try TokenFamily.decide(
                .refresh(
                    presentedHash: presented, newRefreshHash: next.hash, newRefreshExpiresAt: time + 14 * 86_400, accessToken: access,
                    userStamp: started.securityStamp),
                state: state, now: time)
            guard case .refreshed = decided.first else { throw SessionHistoryError.refused }
            state = decided.reduce(state, TokenFamily.evolve)
            events += decided
            (presented, token) = (next.hash, next.token)
        }
        return (events, token)
    }
}

/// Why a session could not be aged.
public enum SessionHistoryError: Error, CustomStringConvertible {
    case unknownToken
    case refused

    public var description: String {
        switch self {
        case .unknownToken: "no live token family has that refresh token"
        case .refused: "the family refused a rotation (revoked, expired or its user's stamp changed)"
        }
    }
}
