import Foundation
import PQ

/// Sign in with Apple and Google, and any OpenID provider, exchanged for the realm's tokens
/// (issue 48): the nonces of the exchanges and the ID token checks, with this instance's cache
/// of the providers' keys.
public struct Federation: Sendable {
    public let nonces: FederationNonces
    public let verifier: IDTokenVerifier
    public let links: FederationLinkSessions
    public let appleCodes: AppleAuthorizationCodes

    public init(
        masterKey: [UInt8], sealer: KeySealer, pool: PQPool, keys: ProviderKeys = ProviderKeys(), poster: any FormPoster = URLSessionFormPoster(),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        nonces = FederationNonces(masterKey: masterKey, pool: pool, clock: clock)
        verifier = IDTokenVerifier(keys: keys)
        links = FederationLinkSessions(masterKey: masterKey)
        appleCodes = AppleAuthorizationCodes(sealer: sealer, poster: poster)
    }
}
