import Foundation
import PQ

/// The nonces of ID token exchanges (issue 48; OpenID Connect Core section 3.1.2.1 `nonce`):
/// the app gets one from `POST /connect/federation/nonce`, gives its SHA-256 (hex) to Sign in
/// with Apple or Google, and sends the nonce itself with the exchange. The ID token's `nonce`
/// must then be that hash, and the nonce is spent: a token captured from another sign-in, or
/// replayed, finds no nonce to match. Stateless to issue (an HMAC'd time slot, as attestation
/// challenges), single use by the database (`dpop_jtis`, across instances and failovers).
public struct FederationNonces: Sendable {
    let challenges: AttestationChallenges
    let pool: PQPool
    let clock: @Sendable () -> Date

    public init(masterKey: [UInt8], pool: PQPool, clock: @escaping @Sendable () -> Date = { Date() }) {
        challenges = AttestationChallenges(masterKey: masterKey, slot: 300, label: "modgud federation nonce v1")
        self.pool = pool
        self.clock = clock
    }

    /// A new nonce, and how long it is good for at least (one slot).
    public func issue() -> (nonce: String, expiresIn: Int) {
        (challenges.issue(now: clock()), Int(challenges.slot))
    }

    /// Spends `nonce`: refused when it is not this deployment's, not current, or spent.
    public func spend(_ nonce: String) async throws {
        let now = clock()
        guard challenges.accepts(nonce, now: now) else {
            throw FederationError.refused(reason: "nonce", detail: "the nonce is not one this server issued, or it expired")
        }
        let until = now.addingTimeInterval(Double(2 * challenges.slot))
        guard try await pool.query(DPoPReplayTable.claim(jkt: "federation-nonce", jti: nonce, now: now, until: until)).first != nil else {
            throw FederationError.refused(reason: "nonce", detail: "the nonce was used before")
        }
    }
}
