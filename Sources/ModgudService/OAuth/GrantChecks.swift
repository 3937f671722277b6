import ModgudDomain
import PQ

/// What a token request must pass that the database decides: its rate-limit count and its
/// DPoP proof's jti claim (RFC 9449 section 11.1). A grant that counts itself sends them in
/// one pipeline with its own first lookup (one round trip, one implicit transaction) instead
/// of a round trip of their own before it (issue 49).
///
/// The verdicts are read in the order the token endpoint gives them when it sends them
/// itself: a 429 first, then a replayed proof, then the lookup's answer.
///
/// A value internal to the service (issue 68): the token endpoint builds it from what it
/// prepared and hands it over inside the request (`UserGrantRequest`, `RefreshRequest`); the
/// service's first read carries it. No grant, table, `AggregateActor` or store names it.
public struct GrantChecks: Sendable {
    /// The request's prepared count (nil: counted already, or nothing to count).
    var rateLimit: RateLimitCheck?
    /// The proof's claim (nil: no proof, or claimed already).
    var dpopClaim: DPoPClaim?

    /// The checks of a grant that counts itself: the request's count and its proof's claim.
    public init(rateLimit: RateLimitCheck? = nil, dpopClaim: DPoPClaim? = nil) {
        self.rateLimit = rateLimit
        self.dpopClaim = dpopClaim
    }

    /// Nothing to send.
    public static let none = GrantChecks()

    private var count: PQQuery? { rateLimit?.query }

    /// Whether there is a statement to send.
    var isEmpty: Bool { count == nil && dpopClaim == nil }

    /// The statements around a lookup, and where the lookup's result is among theirs.
    ///
    /// With a jti claim the transaction writes WAL (`dpop_jtis` is logged): it commits without
    /// waiting for its flush, because every grant answers only after a synchronous commit of
    /// its own, whose flush covers every WAL record before it, the claim's included
    /// (docs/decisions.md, "Security state across a crash and a failover"). Without a claim it
    /// commits as usual. (Relaxing every such transaction shortened the count's wait for its
    /// row but bought no rate: docs/decisions.md, "That transaction still waits for its flush".)
    ///
    /// The count goes last: its bucket's row stays locked until the commit, and every request
    /// of one client counts that row, so the less runs after it, the shorter the queue behind
    /// it. One implicit transaction either way: the order changes no outcome.
    func pipeline(around lookup: PQQuery) -> (queries: [PQQuery], lookupIndex: Int) {
        var (queries, index) = statements
        queries.insert(lookup, at: index)
        return (queries, index)
    }

    /// The statements without the lookup, and the index the lookup goes in at (for a lookup
    /// another module builds, such as a stream's read).
    var statements: (queries: [PQQuery], lookupIndex: Int) {
        let relaxed = dpopClaim.map { _ in DPoPReplayTable.commitWithTheNextFlush }
        let before = [relaxed, dpopClaim?.query].compactMap { $0 }
        return (before + [count].compactMap { $0 }, before.count)
    }

    /// Judges the pipeline's answers (`pipeline(around:)`): throws `RateLimited`, then
    /// `DPoPError.replayed`; otherwise returns the lookup's result.
    func verdicts(_ results: [PQResult], lookupIndex: Int) throws -> PQResult {
        if let rateLimit, count != nil { try rateLimit.verdict(results[lookupIndex + 1]) }
        if let dpopClaim { try dpopClaim.verdict(results[lookupIndex - 1]) }
        return results[lookupIndex]
    }

    /// Runs `lookup` with the checks in one pipeline (alone when there are none), judges the
    /// verdicts and returns the lookup's result.
    func run(_ lookup: PQQuery, on pool: PQPool) async throws -> PQResult {
        guard !isEmpty else { return try await pool.query(lookup) }
        let (queries, index) = pipeline(around: lookup)
        return try verdicts(try await pool.pipeline(queries), lookupIndex: index)
    }

    /// Sends the count and the claim without a lookup (a grant whose first statement is not a
    /// read), with a synchronous commit of their own; judges them as `verdicts` does.
    func send(on pool: PQPool) async throws {
        guard !isEmpty else { return }
        let results = try await pool.pipeline([dpopClaim?.query, count].compactMap { $0 })
        if let rateLimit, count != nil { try rateLimit.verdict(results[results.count - 1]) }
        if let dpopClaim { try dpopClaim.verdict(results[0]) }
    }

    /// Runs a grant's own checks before its first read (`body`: the parameters' shape, the
    /// scopes and audiences asked for); a refusal there is counted before it is thrown.
    func countingRefusals<T>(on pool: PQPool, _ body: () throws -> T) async throws -> T {
        do {
            return try body()
        } catch {
            try await countRefusal(on: pool)
            throw error
        }
    }

    /// Sends only the count, for a request refused before its lookup: a refusal is counted
    /// too, so requests cannot be tried without limit (its proof is not claimed, as nothing
    /// was granted). Throws `RateLimited` in place of the refusal when over the limit.
    func countRefusal(on pool: PQPool) async throws {
        try await rateLimit?.run(on: pool)
    }

    /// Sends the count alone (a grant whose first lookup is not the proof's: a link session's)
    /// and leaves the claim to the grant's first read.
    mutating func sendCount(on pool: PQPool) async throws {
        try await rateLimit?.run(on: pool)
        rateLimit = nil
    }

    /// An aggregate's current state read with the checks (`AggregateActor.current(pipelinedWith:at:judging:)`):
    /// their verdicts are thrown before the state is used; a plain `current()` when there are none.
    func read<A: Aggregate>(_ actor: AggregateActor<A>) async throws -> (state: A.State, version: Int64) where A.State: Sendable {
        guard !isEmpty else { return try await actor.current() }
        let (queries, index) = statements
        return try await actor.current(pipelinedWith: queries, at: index) { results in _ = try verdicts(results, lookupIndex: index) }
    }
}
