import Foundation
import PQ

/// Checks DPoP proofs completely: `DPoPProof`'s stateless steps, then freshness by a server
/// nonce or `iat` (RFC 9449 sections 4.3 steps 10–11, and 8), then jti single use across
/// every instance (section 11.1).
///
/// Mobile clocks are often minutes off, so freshness does not hang on a tight `iat` window
/// alone. A proof with one of this deployment's nonces is fresh whatever its `iat`. A proof
/// without one passes only if its `iat` is within `window` of the server's clock. Otherwise
/// the client is told `use_dpop_nonce`, with a nonce and how far off its clock was, and one
/// retry settles it.
public struct DPoPVerifier: Sendable {
    let pool: PQPool
    public let nonces: DPoPNonces
    /// How far `iat` may be from the server's clock in a proof without a nonce.
    public let window: Int64

    /// The instance's clock (tests inject one).
    public let clock: @Sendable () -> Date

    public init(pool: PQPool, nonces: DPoPNonces, window: Int64 = 60, clock: @escaping @Sendable () -> Date = { Date() }) {
        self.pool = pool
        self.nonces = nonces
        self.window = window
        self.clock = clock
    }

    /// The nonce to hand out now (`DPoP-Nonce`).
    public var currentNonce: String { nonces.current(now: Int64(clock().timeIntervalSince1970)) }

    /// - Parameters:
    ///   - requireNonce: the client's setting asks for a nonce in every proof.
    /// - Throws: `DPoPError`.
    public func verify(_ jwt: String, method: String, url: String, accessToken: String? = nil, now: Date? = nil, requireNonce: Bool = false)
        async throws -> DPoPProof
    {
        let checked = try check(jwt, method: method, url: url, accessToken: accessToken, now: now, requireNonce: requireNonce)
        try checked.claim.verdict(try await pool.query(checked.claim.query))
        return checked.proof
    }

    /// Every check but the jti's single use, and the statement that claims the jti, for a
    /// caller that sends it in a pipeline with its own statements (the refresh grant: one
    /// round trip and one transaction fewer per bound refresh).
    /// - Throws: `DPoPError`.
    public func check(_ jwt: String, method: String, url: String, accessToken: String? = nil, now: Date? = nil, requireNonce: Bool = false)
        throws(DPoPError) -> (proof: DPoPProof, claim: DPoPClaim)
    {
        let now = now ?? clock()
        let proof = try DPoPProof(parsing: jwt, method: method, url: url, accessToken: accessToken)
        let seconds = Int64(now.timeIntervalSince1970)
        if let nonce = proof.nonce, nonces.accepts(nonce, now: seconds) {
            // Step 10: our nonce, in its slot or the next: fresh.
        } else if proof.nonce != nil {
            throw .useNonce("the nonce is not current")
        } else if requireNonce {
            throw .useNonce("this client's proofs must carry a server nonce")
        } else if abs(seconds - proof.issuedAt) > window {
            // Step 11, with the offset for the client's log.
            let offset = proof.issuedAt - seconds
            throw .useNonce("iat is \(abs(offset)) s \(offset > 0 ? "ahead of" : "behind") the server's clock; send the nonce")
        }
        // Section 11.1: single use, for as long as any proof is acceptable (a nonce's two slots).
        let expiry = now.addingTimeInterval(Double(max(2 * nonces.slot, 2 * window)))
        return (proof, DPoPClaim(query: DPoPReplayTable.claim(jkt: proof.key.thumbprint, jti: proof.jti, now: now, until: expiry)))
    }

    /// Claims a proof's jti on its own (the grants that do not send it in their own pipeline).
    /// - Throws: `DPoPError.replayed` when it was used within its window.
    public func claim(_ claim: DPoPClaim) async throws {
        try claim.verdict(try await pool.query(claim.query))
    }

    /// Deletes jtis past their window (the maintenance loop).
    public func prune(now: Date) async throws {
        try await DPoPReplayTable.prune(before: now, pool: pool)
    }
}

/// The claim of a proof's jti (RFC 9449 section 11.1): opaque outside the services, which send
/// its statement (alone, or in one pipeline with a grant's own lookup) and judge the answer.
/// The database decides between instances and concurrent requests.
public struct DPoPClaim: Sendable {
    let query: PQQuery

    /// - Throws: `DPoPError.replayed` when the jti was used within its window.
    func verdict(_ result: PQResult) throws(DPoPError) {
        guard result.first != nil else { throw .replayed }
    }
}
