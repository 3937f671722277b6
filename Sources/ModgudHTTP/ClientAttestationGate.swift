import Hummingbird
import Metrics
import ModgudDomain
import ModgudService

/// Attestation-based client authentication at every endpoint a public client calls (issue 47;
/// draft-ietf-oauth-attestation-based-client-auth-10 section 7): the token endpoint, the
/// Authorization Challenge Endpoint, the email code and link requests, the passkey ceremonies'
/// begin, and Auth0's passwordless start and passkey register and challenge. It runs before
/// the endpoint does anything, so a refused request sends no mail, stores no ceremony and
/// spends no code.
///
/// A client set to `off` is served as if the headers were not there; `allowed` checks them
/// when present; `required` refuses a request without them. A request that names no client
/// is attested for the client its attestation names; without one it is served, whatever the
/// realm's other clients require (issue 65: attestation is per client), and what it starts is
/// bound to no client and no attested instance (`FlowBinding`), so a `required` client cannot
/// redeem it.
struct ClientAttestationGate: Sendable {
    let verifier: ClientAttestationVerifier?
    let clients: ClientAuthenticator


    /// Checks a request of `clientID`, whose settings the endpoint has.
    /// - Parameter dpopKey: the thumbprint of the request's verified DPoP proof (the token
    ///   endpoint): it must be the attested key, and it may stand in for the PoP.
    func check(_ request: Request, clientID: String, settings: ClientSettings, realm: String, issuer: String, endpoint: String, dpopKey: String? = nil)
        async throws -> ClientAttestationFact?
    {
        guard settings.clientAttestation != .off else { return nil }
        let attestations = request.headers[values: .clientAttestation]
        let pops = request.headers[values: .clientAttestationPoP]
        guard !attestations.isEmpty || !pops.isEmpty else {
            guard settings.clientAttestation == .required else {
                verifier?.tally.record(realm: realm, clientID: clientID, .unattested)
                return nil
            }
            throw refuse(.invalid("this client must present OAuth-Client-Attestation and OAuth-Client-Attestation-PoP"), realm, clientID, endpoint)
        }
        guard attestations.count == 1, pops.count <= 1 else {
            throw refuse(.invalid("send exactly one OAuth-Client-Attestation and one OAuth-Client-Attestation-PoP"), realm, clientID, endpoint)
        }
        guard let verifier else { throw refuse(.invalid("this server cannot check attestations (no master key)"), realm, clientID, endpoint) }
        do {
            let attested = try await verifier.verify(
                attestation: attestations[0], pop: pops.first, clientID: clientID, realm: realm, issuer: issuer, dpopKey: dpopKey)
            // With DPoP, the tokens are bound to the attested instance's key and no other.
            if let dpopKey, dpopKey != attested.jkt {
                throw ClientAttestationError.invalid("the DPoP key must be the attested instance key")
            }
            Counter(label: "modgud_client_attestation_total", dimensions: [("outcome", "attested"), ("endpoint", endpoint)]).increment()
            verifier.tally.record(realm: realm, clientID: clientID, .attested)
            return attested
        } catch let error as ClientAttestationError {
            throw refuse(error, realm, clientID, endpoint)
        }
    }

    /// Checks a request that starts a flow (a code, a link, a passkey ceremony) and names its
    /// client optionally (`clientID`, else its attestation's `sub`), and tells what the flow is
    /// bound to (issue 65; draft-ietf-oauth-attestation-based-client-auth-10 section 9.4).
    /// - A request that names no client is served: bound to no client and no instance.
    /// - A named client's rules apply (a `required` one refuses a request without a valid
    ///   attestation); the flow is bound to it and to the attested instance, if any.
    /// - An unknown client is the endpoint's to answer, as before attestation existed; what the
    ///   endpoint starts for it is bound to that name, which no client of the realm redeems.
    func binding(_ request: Request, clientID: String?, realm: String, issuer: String, endpoint: String) async throws -> FlowBinding {
        let named = clientID ?? request.headers[values: .clientAttestation].first.flatMap(ClientAttestationVerifier.subject(of:))
        guard let named else { return .unbound }
        guard let settings = try await clients.enabledClient(realm: realm, clientID: named) else { return FlowBinding(clientID: named) }
        let attested = try await check(request, clientID: named, settings: settings, realm: realm, issuer: issuer, endpoint: endpoint)
        return FlowBinding(clientID: named, attestedKey: attested?.jkt)
    }

    /// The draft's error, counted (per client when the request names one it has).
    private func refuse(_ error: ClientAttestationError, _ realm: String, _ clientID: String, _ endpoint: String) -> RequestParsing.Failure {
        Counter(label: "modgud_client_attestation_total", dimensions: [("outcome", error.code), ("endpoint", endpoint)]).increment()
        verifier?.tally.record(realm: realm, clientID: clientID, .refused)
        var response = OAuthResponses.error(OAuthError(error.code, error.detail), status: error.code == "invalid_client_attestation" ? .unauthorized : .badRequest)
        if let verifier { response.headers[.clientAttestationChallenge] = verifier.challenge() }
        return .response(response)
    }
}
