import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// The state of OAuth 2.0 for First-Party Applications (draft-ietf-oauth-first-party-apps,
/// issue 45): `auth_session`s between Authorization Challenge requests, and the authorization
/// codes they end in. What a step proves (an email code, a magic link, a passkey) is redeemed by
/// the native grants' own services; this type only keeps the session between steps and turns
/// the sign-in's token response into a code the client redeems at the token endpoint with its
/// PKCE verifier (and DPoP key).
///
/// Shared by every instance (PostgreSQL tables, migration 0021); nothing in them is readable
/// without the session token or the code (`BearerSeal`). Each session is also a stream of the
/// event log (`AuthorizationSession`: begun, code issued, code redeemed or refused), like the
/// other ceremonies; its expected version decides that a session issues one code.
public struct FirstPartyAuthorization: Sendable {
    /// What an `auth_session` carries between steps.
    public struct SessionState: Codable, Sendable, Equatable {
        /// The session's stream (`StreamNames.authorizationSession`).
        public var sessionID: UUID?
        /// RFC 7636 section 4.2 (S256).
        public var codeChallenge: String
        public var scope: String?
        public var resources: [String]
        /// The address the client named (`login_hint`), for the email step.
        public var email: String?
        /// How that address was written to. A session takes only that factor.
        public var delivery: Delivery?
        /// An email code the person proved while their second factor is still owed: the next
        /// step brings the TOTP code and the held code is redeemed with it.
        public var heldCode: String?
        /// A magic link's user and token held likewise.
        public var heldLink: HeldLink?
        /// The passkey ceremony begun for this session (its id), for the assertion step.
        public var passkeyCeremony: String?
        /// A re-authorization session (the `auth_session` of a token response, section 6.1): the
        /// person it was issued for; presented again, it begins an email-code sign-in of theirs.
        public var reauthenticates: UUID?
        /// The sign-in (token family) whose token response carried this re-authorization
        /// session: revoked, it takes the session with it (issue 69; a reused code revokes
        /// both). nil in sessions begun before this was kept.
        public var signInFamily: UUID?
        /// OpenID Connect `nonce` of the request that began the sign-in: the ID token carries
        /// it (OpenID Connect Core section 3.1.3.6). Absent in sessions begun before issue 69.
        public var nonce: String?
        /// The person asked to sign up (`prompt=create`).
        public var signUp = false
        /// The realm's required registration fields were missing: nothing was sent yet; the
        /// next step brings them and the code is sent then.
        public var awaitingNames = false

        /// `email_delivery`: a six-digit code or a magic link (sealed in the session as these words).
        public enum Delivery: String, Codable, Sendable {
            case code
            case link
        }

        public struct HeldLink: Codable, Sendable, Equatable {
            public var userID: String
            public var token: String

            public init(userID: String, token: String) {
                self.userID = userID
                self.token = token
            }
        }

        public init(codeChallenge: String, scope: String?, resources: [String], email: String? = nil, delivery: Delivery? = nil) {
            self.codeChallenge = codeChallenge
            self.scope = scope
            self.resources = resources
            self.email = email
            self.delivery = delivery
        }
    }

    /// A session found for a request: its token, and its state.
    public struct Session: Sendable {
        public let token: String
        public var state: SessionState
    }

    /// An `auth_session` lives as long as an email code (docs/spec.md: 10 minutes).
    public static let sessionLifetime: TimeInterval = 600
    /// RFC 6749 section 4.1.2 recommends at most 10 minutes; a native app redeems at once.
    public static let codeLifetime: TimeInterval = 60
    /// A re-authorization session (a token response's `auth_session`) lasts as long as the
    /// longest session a realm allows by default (30 days); it only lets the client ask for a
    /// code to the person's own address, which signs them in again.
    public static let reauthenticationLifetime: TimeInterval = 30 * 86_400

    let pool: PQPool
    let sessions: AggregateRegistry<AuthorizationSession>
    let now: @Sendable () -> Date

    init(pool: PQPool, sessions: AggregateRegistry<AuthorizationSession>, now: @escaping @Sendable () -> Date = Date.init) {
        self.pool = pool
        self.sessions = sessions
        self.now = now
    }

    /// Begins a session for `clientID` taking `factor`, bound to the DPoP key `jkt` when the
    /// request had one: its row and its `authorization_session.begun` commit together.
    public func begin(
        realm: String, clientID: String, jkt: String?, factor: AuthorizationSession.Factor, state initial: SessionState, metadata: EventMetadata
    ) async throws -> Session {
        let made = try made(realm: realm, clientID: clientID, jkt: jkt, factor: factor, state: initial)
        _ = try await sessions.actor(forNew: made.stream)
            .execute(.begin(made.begun), now: now(), metadata: metadata, extra: { _ in [made.insert] })
        return made.session
    }

    /// Presents a re-authorization session (section 6.1; RFC 9470 step-up): it is spent and the
    /// sign-in session with `state` takes over, in one transaction (its
    /// `authorization_session.continued`, the new session's `begun`, the rows). nil when it was
    /// presented before (on any instance).
    public func continueReauthentication(
        _ presented: Session, realm: String, clientID: String, jkt: String?, state: SessionState, metadata: EventMetadata
    ) async throws -> Session? {
        guard let presentedID = presented.state.sessionID else { return nil }
        let made = try made(realm: realm, clientID: clientID, jkt: jkt, factor: .emailCode, state: state, userID: presented.state.reauthenticates)
        let statements = [AuthorizationSessionsTable.end(hash: OpaqueToken.hash(presented.token), realm: realm), made.insert]
        let begun = try AuthorizationSessionEvent.begun(made.begun).newEvent()
        do {
            _ = try await sessions.actor(for: StreamNames.authorizationSession(realm: realm, sessionID: presentedID)).execute(
                .continueAs(next: made.begun.sessionID), now: now(), metadata: metadata, extra: { _ in statements },
                alsoAppending: { _ in [StreamWrite(stream: made.stream, expected: .noStream, events: [begun])] })
        } catch let refusal as DomainError where refusal.code == "AuthorizationSession.Invalid" {
            return nil
        }
        return made.session
    }

    /// A new session's token, row and `begun` event, not yet written.
    private func made(
        realm: String, clientID: String, jkt: String?, factor: AuthorizationSession.Factor, state initial: SessionState, userID: UUID? = nil
    ) throws -> (session: Session, stream: StreamRef, begun: AuthorizationSessionBegun, insert: PQQuery) {
        let (token, hash) = OpaqueToken.generate()
        var state = initial
        let sessionID = UUID()
        state.sessionID = sessionID
        let expiresAt = now().addingTimeInterval(factor == .reauthentication ? Self.reauthenticationLifetime : Self.sessionLifetime)
        let sealed = try BearerSeal.seal(state, secret: token, context: Self.sessionContext(realm: realm, clientID: clientID))
        let insert = AuthorizationSessionsTable.insert(hash: hash, realm: realm, clientID: clientID, jkt: jkt, sealed: sealed, expiresAt: expiresAt)
        let begun = AuthorizationSessionBegun(
            sessionID: sessionID, clientID: clientID, factor: factor, dpopBound: jkt != nil, userID: userID ?? state.reauthenticates, expiresAt: expiresAt)
        return (Session(token: token, state: state), StreamNames.authorizationSession(realm: realm, sessionID: sessionID), begun, insert)
    }

    /// The live session `token` names, or nil (the draft's `invalid_session`): unknown,
    /// expired, ended, another client's, or bound to another DPoP key than the request's (or
    /// to one when the request has none).
    public func session(token: String, realm: String, clientID: String, jkt: String?) async throws -> Session? {
        guard token.utf8.count <= 128,
            let row = try await AuthorizationSessionsTable.find(hash: OpaqueToken.hash(token), realm: realm, now: now(), pool: pool),
            row.clientID == clientID, row.jkt == jkt,
            let state = BearerSeal.open(SessionState.self, row.sealed, secret: token, context: Self.sessionContext(realm: realm, clientID: clientID)),
            state.sessionID != nil  // (a session begun before sessions had streams starts again)
        else { return nil }
        return Session(token: token, state: state)
    }

    /// The client a live session belongs to (draft section 5.1: a public client may name itself
    /// by its `auth_session` alone); nil for an unknown or expired one.
    public func clientOfSession(token: String, realm: String) async throws -> String? {
        guard token.utf8.count <= 128 else { return nil }
        return try await AuthorizationSessionsTable.find(hash: OpaqueToken.hash(token), realm: realm, now: now(), pool: pool)?.clientID
    }

    /// Keeps a session's new state (a step held a code for the second factor, a ceremony began).
    public func update(_ session: Session, realm: String, clientID: String) async throws {
        let sealed = try BearerSeal.seal(session.state, secret: session.token, context: Self.sessionContext(realm: realm, clientID: clientID))
        try await AuthorizationSessionsTable.update(hash: OpaqueToken.hash(session.token), realm: realm, sealed: sealed, pool: pool)
    }

    /// Ends `session` and issues the authorization code standing for `response` (a user grant's
    /// answer): the session's `authorization_session.code_issued`, the end of its row and the
    /// code's row commit together. nil when another request (on any instance) ended the session
    /// first: the stream's expected version lets one through.
    public func issueCode(
        for session: Session, realm: String, clientID: String, jkt: String?, response: TokenResponse, metadata: EventMetadata
    ) async throws -> String? {
        guard let sessionID = session.state.sessionID, let signIn = response.signIn else { return nil }
        let (code, hash) = OpaqueToken.generate()
        let expiresAt = now().addingTimeInterval(Self.codeLifetime)
        let sealed = try BearerSeal.seal(
            SealedResponse(response, sessionID: sessionID), secret: code, context: Self.codeContext(realm: realm, clientID: clientID))
        let statements = [
            AuthorizationSessionsTable.end(hash: OpaqueToken.hash(session.token), realm: realm),
            AuthorizationCodesTable.insert(
                hash: hash, realm: realm, clientID: clientID, codeChallenge: session.state.codeChallenge, jkt: jkt, sealed: sealed, expiresAt: expiresAt),
        ]
        let issued = AuthorizationCodeIssued(sessionID: sessionID, userID: signIn.userID, familyID: signIn.familyID, expiresAt: expiresAt)
        do {
            _ = try await sessions.actor(for: StreamNames.authorizationSession(realm: realm, sessionID: sessionID))
                .execute(.issueCode(issued), now: now(), metadata: metadata, extra: { _ in statements })
        } catch let refusal as DomainError where refusal.code == "AuthorizationSession.Invalid" {
            return nil
        }
        return code
    }

    /// Redeems an authorization code (RFC 6749 section 4.1.3, RFC 7636 section 4.6, RFC 9449
    /// section 10): taken out first, so it is spent whatever follows; then it must be live, the
    /// client's, verified by the PKCE verifier and presented with the DPoP key it is bound to.
    /// Every refusal is the same `invalid_grant`; the session's stream records which it was.
    public func redeem(code: String, realm: String, clientID: String, verifier: String, jkt: String?, metadata: EventMetadata) async throws
        -> TokenResponse
    {
        let refused = Self.codeRefused
        guard code.utf8.count <= 128,
            let row = try await AuthorizationCodesTable.take(hash: OpaqueToken.hash(code), realm: realm, now: now(), pool: pool),
            let sealed = BearerSeal.open(SealedResponse.self, row.sealed, secret: code, context: Self.codeContext(realm: realm, clientID: row.clientID))
        else { throw refused }
        // RFC 9700 section 4.2.4: a code presented again revokes what it gave.
        if row.redeemedBefore != nil { throw CodeReused(familyID: sealed.familyID) }
        let refusal: AuthorizationCodeRedeemed.Refusal? =
            if row.expiresAt <= now() { .expired }
            else if row.clientID != clientID { .otherClient }
            else if !PKCE.verifies(verifier, challenge: row.codeChallenge) { .wrongVerifier }
            else if row.jkt != jkt { .otherKey }
            else { nil }
        if let sessionID = sealed.sessionID {
            do {
                _ = try await sessions.actor(for: StreamNames.authorizationSession(realm: realm, sessionID: sessionID))
                    .execute(.redeem(refusal: refusal), now: now(), metadata: metadata)
            } catch let refusal as DomainError where refusal.code == "AuthorizationSession.CodeInvalid" {
                throw refused  // (recorded as redeemed already: a code is spent once)
            }
        }
        guard refusal == nil else { throw refused }
        var response = sealed.response
        // Section 6.1: an auth_session for a later step-up, bound like the code (client, key).
        // A recovery session (issue 46) gets none: it only enrolls a passkey, which then signs in.
        if let userID = sealed.userID, response.scope != TokenService.recoveryScope {
            var state = SessionState(codeChallenge: "", scope: nil, resources: [])
            state.reauthenticates = userID
            state.signInFamily = sealed.familyID
            response.authSession = try await begin(realm: realm, clientID: clientID, jkt: jkt, factor: .reauthentication, state: state, metadata: metadata)
                .token
        }
        return response
    }

    /// Every refusal of a code at the token endpoint (RFC 6749 section 5.2).
    public static let codeRefused = OAuthError.invalidGrant("The authorization code is invalid, expired or used, or the verifier does not match.")

    /// A code redeemed before was presented again: the caller revokes the sign-in `familyID`
    /// (RFC 9700 section 4.2.4; OWASP ASVS 10.4.2) and answers `codeRefused`.
    public struct CodeReused: Error, Sendable {
        public var familyID: UUID?
    }

    /// Deletes expired sessions and codes (housekeeping).
    public func prune() async throws {
        try await AuthorizationSessionsTable.prune(before: now(), pool: pool)
        try await AuthorizationCodesTable.prune(before: now(), pool: pool)
    }

    static func sessionContext(realm: String, clientID: String) -> String { "auth_session \(realm) \(clientID)" }
    static func codeContext(realm: String, clientID: String) -> String { "authorization_code \(realm) \(clientID)" }
}
