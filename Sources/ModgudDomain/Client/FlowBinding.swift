/// What a sign-in flow is bound to from its first request to the token (issue 65): the client
/// the starting request named, and the attested app instance it came from. A mailed code, a
/// magic link and a passkey ceremony carry it; whoever redeems them must match it.
///
/// Attestation-based client authentication authenticates a client *instance* at each request
/// (draft-ietf-oauth-attestation-based-client-auth-10 section 9.4, binding of protocol artifacts: the PoP proves possession of
/// the attested key). Checking it only at the door of each request would let an unattested
/// script start a flow that the genuine app then finishes, or let one instance finish what
/// another began; binding the flow to the key closes both.
///
/// Old events carry no binding: they read as `unbound`.
public struct FlowBinding: Codable, Hashable, Sendable {
    /// The client the starting request named (its `client_id`, `ClientId`, or its attestation's
    /// `sub`); nil: it named none, and any client may redeem it unless attestation is required.
    public var clientID: String?
    /// The RFC 7638 thumbprint of the attested instance key of the starting request; nil: the
    /// request was not attested.
    public var attestedKey: String?

    public init(clientID: String? = nil, attestedKey: String? = nil) {
        self.clientID = clientID
        self.attestedKey = attestedKey
    }

    /// Started by a request that named no client and carried no attestation.
    public static let unbound = FlowBinding()

    /// Who redeems: the client of the redeeming request, its attested instance key, and whether
    /// the client requires attestation (`ClientAttestationMode.required`).
    public struct Presenter: Hashable, Sendable {
        public var clientID: String?
        public var attestedKey: String?
        public var attestationRequired: Bool

        public init(clientID: String?, attestedKey: String? = nil, attestationRequired: Bool = false) {
            self.clientID = clientID
            self.attestedKey = attestedKey
            self.attestationRequired = attestationRequired
        }

        /// No client and no attestation: redeems only an unbound flow (a person's own address
        /// confirmation, under their bearer token).
        public static let anyone = Presenter(clientID: nil)
    }

    /// Whether `presenter` may redeem what was started under this binding:
    /// - a flow started for a client is that client's alone;
    /// - a flow started by an attested instance is that instance's alone;
    /// - a client that requires attestation redeems only what its own attested instance
    ///   started, never an unattested (or unnamed) flow.
    public func admits(_ presenter: Presenter) -> Bool {
        if let clientID, clientID != presenter.clientID { return false }
        if presenter.attestationRequired || attestedKey != nil { return attestedKey != nil && attestedKey == presenter.attestedKey }
        return true
    }
}
