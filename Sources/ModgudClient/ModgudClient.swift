import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A native app's (or CLI's) client of a Modgud server: sign-in by email code, magic link or
/// passkey, passkey sign-up and management, and a session that refreshes itself.
///
/// The refresh is single-flight: however many callers find the access token expired at
/// once, one refresh request goes out and every caller gets its result. The server's refresh
/// reuse detection revokes a session whose spent refresh token is presented again, so two
/// refreshes racing would log the user out; this client never presents a spent token.
///
/// Sign-in flows are in `ModgudClient+SignIn.swift`, passkey management in
/// `ModgudClient+Passkeys.swift`.
public actor ModgudClient {
    public struct Configuration: Sendable {
        /// The realm's issuer, `https://login.example.com` (the OpenID Provider's identifier).
        public var issuer: URL
        public var clientID: String
        /// Asked for at sign-in.
        public var scope: String
        /// An access token this close to its expiry counts as expired (clock skew, latency).
        public var refreshLeeway: TimeInterval

        public init(issuer: URL, clientID: String, scope: String = "openid offline_access", refreshLeeway: TimeInterval = 30) {
            self.issuer = issuer
            self.clientID = clientID
            self.scope = scope
            self.refreshLeeway = refreshLeeway
        }

        /// The issuer as the server writes it: no trailing slash.
        var issuerText: String {
            var text = issuer.absoluteString
            while text.hasSuffix("/") { text.removeLast() }
            return text
        }
    }

    public let configuration: Configuration
    /// The key tokens are bound to (RFC 9449), nil for bearer tokens.
    let dpop: (any DPoPSigner)?
    /// The app instance's attestation (issue 47), sent to the server with every request.
    let attestation: (any ClientAttestationProvider)?
    let store: any TokenStore
    let urlSession: URLSession
    let now: @Sendable () -> Date
    /// The issuer's metadata once fetched (`discovery()`).
    var discovered: Discovery?
    var session: ModgudSession?
    private var loaded = false
    private var refreshing: Task<ModgudSession, any Error>?
    /// The server's latest DPoP nonce (RFC 9449 section 8), sent in the next proof.
    var dpopNonce: String?
    /// What re-authenticates the person when an API asks for a fresher sign-in (RFC 9470).
    private var stepUpHandler: StepUpHandler?

    /// An API's RFC 9470 challenge (`insufficient_user_authentication`): how fresh, and how
    /// strong, the sign-in must be.
    public struct StepUpChallenge: Sendable, Equatable {
        /// Seconds since the sign-in, at most.
        public var maxAge: Int?
        public var acrValues: String?

        public init(maxAge: Int?, acrValues: String?) {
            self.maxAge = maxAge
            self.acrValues = acrValues
        }

        /// The challenge of an answer, or nil when it is not RFC 9470's (section 3).
        static func parse(_ response: HTTPURLResponse) -> StepUpChallenge? {
            guard response.statusCode == 401, let header = response.value(forHTTPHeaderField: "WWW-Authenticate"),
                header.contains("insufficient_user_authentication")
            else { return nil }
            func parameter(_ name: String) -> String? {
                guard let range = header.range(of: "\(name)=") else { return nil }
                let rest = header[range.upperBound...]
                if rest.hasPrefix("\"") { return rest.dropFirst().split(separator: "\"", maxSplits: 1).first.map(String.init) }
                return rest.split(whereSeparator: { $0 == "," || $0 == " " }).first.map(String.init)
            }
            return StepUpChallenge(maxAge: parameter("max_age").flatMap { Int($0) }, acrValues: parameter("acr_values"))
        }
    }

    /// Re-authenticates the person (with their input: a code, a passkey, `FirstPartyFlow.stepUp`)
    /// so that the session meets `challenge`; the request is then sent once more.
    public typealias StepUpHandler = @Sendable (StepUpChallenge) async throws -> Void

    /// Sets what answers RFC 9470 challenges (nil: `send` returns the 401 and the enrollment
    /// calls throw `.reauthenticationRequired`).
    public func setStepUpHandler(_ handler: StepUpHandler?) {
        stepUpHandler = handler
    }

    /// - Parameters:
    ///   - store: where the session lives between launches (`FileTokenStore`,
    ///     `KeychainTokenStore`); in memory by default.
    ///   - dpop: a key to bind the session's tokens to (DPoP, RFC 9449): every token request
    ///     and every use of a bound access token carries a proof signed by it. Give the same
    ///     key on every launch (a `SecureEnclaveDPoPKey` handle in the Keychain, or a
    ///     `SoftwareDPoPKey` kept as safely as the session): a bound session refreshes only with it.
    ///   - attestation: the app instance's proof that it is the genuine app (`AttestedInstance`;
    ///     docs/guides/genuine-apps.md): its headers go with every request to the server.
    ///   - now: the clock expiry is judged by (tests move it).
    public init(
        configuration: Configuration, store: any TokenStore = MemoryTokenStore(), urlSession: URLSession = URLSession(configuration: .ephemeral),
        dpop: (any DPoPSigner)? = nil, attestation: (any ClientAttestationProvider)? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.dpop = dpop
        self.attestation = attestation
        self.store = store
        self.urlSession = urlSession
        self.now = now
    }

    // MARK: Session

    /// The stored session, if any.
    public func currentSession() async throws -> ModgudSession? {
        try await loadSession()
    }

    /// A live access token: the current one, or a refreshed one when it has expired.
    /// - Throws: `.notSignedIn`, `.sessionEnded` (the refresh was refused: sign in again), or
    ///   the transport's or server's error (the session is kept: try again later).
    public func accessToken() async throws -> String {
        try await liveSession().accessToken
    }

    /// The session with a live access token (refreshed when it has expired).
    func liveSession() async throws -> ModgudSession {
        guard let current = try await loadSession() else { throw ModgudError.notSignedIn }
        if current.expiresAt.timeIntervalSince(now()) > configuration.refreshLeeway { return current }
        return try await refreshed(replacing: current.accessToken)
    }

    /// Refreshes now (single-flight, like every refresh).
    @discardableResult
    public func refresh() async throws -> ModgudSession {
        try await refreshed(replacing: nil)
    }

    /// Sends a request to an API with the access token: `Bearer`, or for a DPoP-bound session
    /// `DPoP` with a proof (and one retry when the API asks for a nonce). A 401
    /// `invalid_token` (revoked or expired early) is retried once after a refresh.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let session = try await liveSession()
        let (data, response) = try await exchangeAuthorized(request, session)
        // RFC 9470: the API wants a fresher (or stronger) sign-in; the handler re-authenticates
        // and the request goes once more with the new session.
        if let challenge = StepUpChallenge.parse(response), let stepUpHandler {
            try await stepUpHandler(challenge)
            return try await exchangeAuthorized(request, try await liveSession())
        }
        guard response.statusCode == 401, (response.value(forHTTPHeaderField: "WWW-Authenticate") ?? "").contains("invalid_token") else {
            return (data, response)
        }
        return try await exchangeAuthorized(request, try await refreshed(replacing: session.accessToken))
    }

    /// The userinfo endpoint's claims (OpenID Connect Core section 5.3).
    public func userInfo() async throws -> [String: JSONValue] {
        let data = try checked(try await send(URLRequest(url: try await discovery().userinfoEndpoint)))
        guard let claims = JSONValue.object(from: data) else { throw ModgudError.invalidResponse(status: 200, body: String(decoding: data.prefix(500), as: UTF8.self)) }
        return claims
    }

    /// Revokes the session at the server (RFC 7009: the whole token family) and forgets it.
    /// The local copy is forgotten even when the server cannot be reached (then this throws).
    public func signOut() async throws {
        guard let current = try await loadSession() else { return }
        session = nil
        try await store.clear()
        let token = current.refreshToken ?? current.accessToken
        let revocation = try await discovery().revocationEndpoint
        _ = try checked(try await exchange(Self.form(revocation, [("token", token), ("client_id", configuration.clientID)])))
    }

    // MARK: Internals shared by the flows

    func loadSession() async throws -> ModgudSession? {
        if !loaded {
            let stored = try await store.load()
            if !loaded {
                session = stored.flatMap { $0.issuer == configuration.issuerText && $0.clientID == configuration.clientID ? $0 : nil }
                loaded = true
            }
        }
        return session
    }

    /// The one refresh in flight, or a new one. `stale`: the access token the caller found
    /// wanting; when the session holds another one already, someone refreshed meanwhile.
    private func refreshed(replacing stale: String?) async throws -> ModgudSession {
        let current = try await loadSession()
        // From here to `refreshing = task` nothing suspends: one refresh at a time.
        if let refreshing { return try await refreshing.value }
        guard let current else { throw ModgudError.notSignedIn }
        if let stale, current.accessToken != stale { return current }
        guard let refreshToken = current.refreshToken else { throw ModgudError.sessionEnded }
        let task = Task { try await self.performRefresh(refreshToken: refreshToken, previous: current) }
        refreshing = task
        defer { refreshing = nil }
        return try await task.value
    }

    private func performRefresh(refreshToken: String, previous: ModgudSession) async throws -> ModgudSession {
        do {
            let data = try checked(
                try await exchangeAtTokenEndpoint([("grant_type", "refresh_token"), ("client_id", configuration.clientID), ("refresh_token", refreshToken)]))
            return try await adopt(data, previous: previous)
        } catch let error as ModgudError {
            // A refused proof (`invalid_dpop_proof`: another key than the session's) leaves the
            // session for a retry with the right key.
            if case .oauth(let code, _, _) = error, code == "invalid_grant" || code == "invalid_client" {
                try await end()
                throw ModgudError.sessionEnded
            }
            if [.accountCannotSignIn, .invalidCode].contains(error) {
                try await end()
                throw ModgudError.sessionEnded
            }
            throw error
        }
    }

    private func end() async throws {
        session = nil
        try await store.clear()
    }

    /// A token response becomes the session (stored before it is returned).
    func adopt(_ data: Data, previous: ModgudSession? = nil) async throws -> ModgudSession {
        struct TokenResponse: Decodable {
            var access_token: String
            var refresh_token: String?
            var id_token: String?
            var expires_in: Double?
            var scope: String?
            var token_type: String?
            var auth_session: String?
            var passkey_upgrade: Bool?
            var device_secret: String?
        }
        guard let token = try? JSONDecoder().decode(TokenResponse.self, from: data) else {
            throw ModgudError.invalidResponse(status: 200, body: String(decoding: data.prefix(500), as: UTF8.self))
        }
        var next = ModgudSession(
            issuer: configuration.issuerText, clientID: configuration.clientID, accessToken: token.access_token,
            refreshToken: token.refresh_token ?? previous?.refreshToken, idToken: token.id_token ?? previous?.idToken,
            expiresAt: now().addingTimeInterval(token.expires_in ?? 300), scope: token.scope ?? previous?.scope,
            tokenType: token.token_type?.caseInsensitiveCompare("DPoP") == .orderedSame ? "DPoP" : nil)
        next.authSession = token.auth_session ?? previous?.authSession
        next.passkeyUpgrade = previous == nil ? token.passkey_upgrade : nil
        next.deviceSecret = token.device_secret ?? previous?.deviceSecret
        try await store.save(next)
        session = next
        loaded = true
        return next
    }

    func exchange(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        guard let attestation, request.url?.host == configuration.issuer.host else { return try await transmit(request) }
        let answer = try await transmit(try await attested(request, attestation, renew: false, challenge: nil))
        // draft-ietf-oauth-attestation-based-client-auth-10 sections 6.2 and 7.4: one retry, with the
        // server's challenge (a clock that is off) or a fresh attestation (an expired one).
        guard [400, 401].contains(answer.1.statusCode), let code = ModgudError.oauthErrorCode(answer.0),
            code == "use_attestation_challenge" || code == "use_fresh_attestation"
        else { return answer }
        let challenge = answer.1.value(forHTTPHeaderField: "OAuth-Client-Attestation-Challenge")
        return try await transmit(try await attested(request, attestation, renew: code == "use_fresh_attestation", challenge: challenge))
    }

    /// `request` with the attestation headers: the Client Attestation JWT and a new PoP.
    private func attested(_ request: URLRequest, _ provider: any ClientAttestationProvider, renew: Bool, challenge: String?) async throws -> URLRequest {
        var request = request
        let (attestation, key) = try await provider.attestation(renew: renew)
        for (name, value) in try ClientAttestationProof.headers(attestation: attestation, signer: key, audience: configuration.issuerText, challenge: challenge) {
            request.setValue(value, forHTTPHeaderField: name)
        }
        return request
    }

    private func transmit(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await Self.transmit(request, on: urlSession)
    }
}
