import Foundation
import ModgudDomain
import PQ
import WebAuthn

/// The authorization server's side of attestation-based client authentication
/// (draft-ietf-oauth-attestation-based-client-auth-10 section 7, "Verification and
/// Processing"): the Client Attestation JWT signed by this realm's
/// attester, for this client and not expired; the PoP signed by its `cnf` key, for this
/// issuer, fresh, and never seen before on any instance.
public struct ClientAttestationVerifier: Sendable {
    let pool: PQPool
    public let keys: SigningKeyRing
    public let challenges: AttestationChallenges
    /// How far a PoP's `iat` may be from the server's clock when it carries no challenge.
    public let window: Int64
    /// This instance's counts of each client's outcomes.
    public let tally: ClientAttestationTally
    public let clock: @Sendable () -> Date

    public init(
        pool: PQPool, keys: SigningKeyRing, challenges: AttestationChallenges, window: Int64 = 60, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.pool = pool
        self.tally = ClientAttestationTally(pool: pool, clock: clock)
        self.keys = keys
        self.challenges = challenges
        self.window = window
        self.clock = clock
    }

    /// A challenge to hand out (`OAuth-Client-Attestation-Challenge`, the challenge endpoint).
    public func challenge() -> String { challenges.issue(now: clock()) }

    /// The client id an attestation names (`sub`), read without verifying it: only to find
    /// the client whose rules then verify it (the endpoints whose requests name no client).
    public static func subject(of attestation: String) -> String? {
        let parts = attestation.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, attestation.utf8.count <= 8192, let bytes = Base64URL.decode(parts[1]),
            let claims = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
        else { return nil }
        return claims["sub"] as? String
    }

    /// Checks the attestation and its PoP.
    /// - Parameters:
    ///   - pop: nil when a DPoP proof by the same key stands in for it (the caller checked
    ///     `dpopKey` is the attested key).
    /// - Throws: `ClientAttestationError`, or the store's error while claiming the jti.
    public func verify(attestation: String, pop: String?, clientID: String, realm: String, issuer: String, dpopKey: String? = nil) async throws
        -> ClientAttestationFact
    {
        let now = clock()
        let claims = try await attestationClaims(attestation, realm: realm, now: now)
        // Section 6.1: the attestation is for this client.
        guard claims.sub == clientID else { throw ClientAttestationError.invalid("the attestation is for another client") }
        let key = try claims.cnf.jwk.key()
        guard let pop else {
            // The DPoP proof by the attested key is the proof of possession.
            guard dpopKey == key.thumbprint else { throw ClientAttestationError.invalid("send OAuth-Client-Attestation-PoP, or a DPoP proof by the attested key") }
            return ClientAttestationFact(platform: claims.platform, app: claims.app, jkt: key.thumbprint)
        }
        let proof = try ClientAttestationPoP(parsing: pop, key: key, issuer: issuer, clientID: clientID)
        // Freshness: one of our challenges, or an `iat` near our clock (section 8).
        let seconds = Int64(now.timeIntervalSince1970)
        if let challenge = proof.challenge {
            guard challenges.accepts(challenge, now: now) else { throw ClientAttestationError.useChallenge("the PoP's challenge is not current") }
        } else if abs(seconds - proof.issuedAt) > window {
            throw ClientAttestationError.useChallenge("the PoP's iat is \(abs(proof.issuedAt - seconds)) s off the server's clock; sign the challenge")
        }
        // Single use of the PoP's jti, across instances and failovers (a logged table, decided
        // by the database), for as long as the PoP could be accepted. The claim commits without
        // waiting for its WAL flush: every gated endpoint answers a success only after a
        // synchronous commit of its own (the grant, the ceremony, the queued mail), whose flush
        // covers the claim's WAL record too, as the refresh grant's DPoP claim does
        // (docs/decisions.md, "Security state across a crash and a failover").
        let until = now.addingTimeInterval(Double(max(2 * challenges.slot, 2 * window)))
        let claim = DPoPReplayTable.claim(jkt: "attestation-pop " + key.thumbprint, jti: proof.jti, now: now, until: until)
        let results: [PQResult]
        do {
            results = try await pool.withConnection { connection in try await connection.pipeline([DPoPReplayTable.commitWithTheNextFlush, claim]) }
        } catch let failure as PQPipelineError {
            throw failure.error
        }
        guard results[1].first != nil else { throw ClientAttestationError.invalid("the PoP was used before") }
        return ClientAttestationFact(platform: claims.platform, app: claims.app, jkt: key.thumbprint)
    }

    /// Claims a challenge the attester issued: single use, decided by the database.
    func spend(challenge: String) async throws {
        let now = clock()
        guard challenges.accepts(challenge, now: now) else { throw ClientAttestationError.useChallenge("the challenge is not current") }
        let until = now.addingTimeInterval(Double(2 * challenges.slot))
        guard try await pool.query(DPoPReplayTable.claim(jkt: "attestation-challenge", jti: challenge, now: now, until: until)).first != nil else {
            throw ClientAttestationError.useChallenge("the challenge was used before")
        }
    }

    private func attestationClaims(_ attestation: String, realm: String, now: Date) async throws -> ClientAttestationClaims {
        guard attestation.utf8.count <= 8192, let headerPart = attestation.split(separator: ".").first, let headerBytes = Base64URL.decode(headerPart),
            let header = (try? JSONSerialization.jsonObject(with: Data(headerBytes))) as? [String: Any]
        else { throw ClientAttestationError.invalid("the attestation is not a JWT") }
        // Section 5.1: explicitly typed.
        guard header["typ"] as? String == ClientAttestationClaims.type else {
            throw ClientAttestationError.invalid("the attestation's typ must be \(ClientAttestationClaims.type)")
        }
        guard let claims = await keys.verified(attestation, as: ClientAttestationClaims.self, realm: realm) else {
            throw ClientAttestationError.invalid("the attestation is not signed by this realm's attester")
        }
        guard claims.exp.value > now else { throw ClientAttestationError.useFresh("the attestation expired; attest the app again") }
        return claims
    }
}
