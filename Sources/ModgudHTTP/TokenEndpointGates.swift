import Hummingbird
import ModgudDomain
import ModgudService

/// The gates a request passes before anything is redeemed, shared by the token endpoint and
/// the Authorization Challenge Endpoint (issue 45: "client authentication as at the token
/// endpoint"): the client's authentication with its rate-limit buckets, and the DPoP proof.
struct TokenEndpointGates: Sendable {
    let parsing: RequestParsing
    let clients: ClientAuthenticator
    let rateLimiter: RateLimiter
    let dpop: DPoPVerifier?
    /// Attestation-based client authentication (issue 47).
    let attestation: ClientAttestationGate

    /// RFC 9449 section 5: a `DPoP` header binds the grant's tokens to its key; the proof is
    /// checked (section 4.3) before the grant redeems anything, so a bad proof spends no code.
    /// A client set to `off` is answered as a server without DPoP would (the header ignored);
    /// one set to `required` gets `invalid_dpop_proof` without a proof. A client with
    /// `dpopNonce` gets `use_dpop_nonce` for a proof without a server nonce.
    /// - Parameter claimed: claim the proof's jti now; otherwise the claim is returned for the
    ///   grant to send in its own pipeline.
    func verifiedDPoPKey(_ request: Request, issuer: String, client: AuthenticatedClient, claimed: Bool) async throws
        -> (key: String, claim: DPoPClaim?)?
    {
        guard client.settings.dpop != .off else { return nil }
        let proofs = request.headers[values: .dpop]
        guard !proofs.isEmpty else {
            if client.settings.dpop == .required { throw DPoPError.invalid("this client must send a DPoP proof") }
            return nil
        }
        // Section 4.3, step 1: exactly one header.
        guard proofs.count == 1 else { throw DPoPError.invalid("send exactly one DPoP header") }
        guard let verifier = dpop else { throw DPoPError.invalid("this server cannot check DPoP proofs") }
        let url = RequestParsing.base(of: issuer) + request.uri.path
        let checked = try verifier.check(proofs[0], method: "POST", url: url, requireNonce: client.settings.dpopNonce)
        guard claimed else { return (checked.proof.key.thumbprint, checked.claim) }
        try await verifier.claim(checked.claim)
        return (checked.proof.key.thumbprint, nil)
    }

    /// Authenticates the client (from the instance's client cache) and prepares the count of
    /// the request's buckets: per source, and once authenticated per client. Only
    /// authenticated requests count per client: unknown client ids create no buckets, and a
    /// flood of wrong secrets does not spend a confidential client's budget; a failed
    /// authentication is counted per source before it is answered.
    /// A public client's id is shared by every installation of the app, so it is counted per
    /// (client, source /64), and per client only as a high circuit breaker (docs/architecture.md, "Rate limits").
    func authenticate(_ request: Request, _ form: FormBody, realm: RealmDirectory.Entry, source: String) async throws
        -> (AuthenticatedClient, RateLimitCheck)
    {
        let perSource = RateLimitBucket(.tokenPerIP, key: source)
        let client: AuthenticatedClient
        do {
            let (id, secret) = try parsing.clientCredentials(request, form)
            client = try await clients.authenticate(realm: realm.realmID, clientID: id, secret: secret)
        } catch {
            try await rateLimiter.check([perSource], realm: realm.realmID, settings: realm.settings)
            throw error
        }
        var buckets = [perSource]
        if client.settings.type == .public {
            buckets.append(RateLimitBucket(.tokenPerClientSource, key: client.id + " " + source, source: source))
        }
        buckets.append(RateLimitBucket(.tokenPerClient, key: client.id, source: source))
        return (client, rateLimiter.prepare(buckets, realm: realm.realmID, settings: realm.settings))
    }
}
