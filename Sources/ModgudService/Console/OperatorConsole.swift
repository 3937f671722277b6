import Crypto
import EventSourcing
import Foundation
import ModgudDomain
import PQ

/// Who may use the operator console, and their sessions (issue 31).
///
/// Operators are users of one realm (the operator realm, `operators` by default) holding the
/// `operator` role. They sign in with an email code through the same service an app uses, as
/// the realm's console client (`modgud-console`), so each sign-in is a token family in the log
/// with the operator as actor. The browser holds a random session token in a cookie; the
/// server keeps its hash beside the family. The session ends on sign-out, after the idle
/// timeout, at the absolute lifetime, or at once when the family is revoked, the operator's
/// security stamp moves on, the account is disabled or the role is taken away.
public struct OperatorConsole: Sendable {
    public struct Settings: Sendable {
        /// The operator realm.
        public var realm: String
        /// A session unused this long ends (15 minutes).
        public var idleTimeout: TimeInterval
        /// A session ends this long after sign-in, used or not (12 hours).
        public var absoluteLifetime: TimeInterval

        public init(realm: String = "operators", idleTimeout: TimeInterval = 900, absoluteLifetime: TimeInterval = 43_200) {
            self.realm = realm
            self.idleTimeout = idleTimeout
            self.absoluteLifetime = absoluteLifetime
        }
    }

    /// The role that admits a user of the operator realm.
    public static let role = "operator"
    /// The operator realm's client the console signs in as.
    public static let clientID = "modgud-console"

    /// A signed-in operator, for one request.
    public struct Operator: Sendable {
        public var realm: String
        public var userID: UUID
        public var familyID: UUID
        /// The token hidden in every form of this session (see `csrfToken(for:)`).
        public var csrfToken: String
        /// How events written for this operator name the actor.
        public var actor: String { "operator:\(realm)/\(userID.uuidString.lowercased())" }
    }

    /// The code was right but the account may not use the console (its family is revoked).
    public struct NotAnOperator: Error, Sendable {}

    public let settings: Settings
    /// Email codes (throws without the master key).
    let emailSignIn: @Sendable () throws -> EmailSignInService
    let passkeys: PasskeyService
    let clients: ClientAuthenticator
    let introspection: TokenIntrospection
    let realms: RealmDirectory
    let families: AggregateRegistry<TokenFamily>
    let operatorLogs: AggregateRegistry<OperatorLog>
    /// Operators' realm, client, user and role (`addOperator`).
    let admin: Administration
    /// Read by `ConsoleSessionsTable`.
    let pool: PQPool
    let now: @Sendable () -> Date

    /// The same console for another operator realm or other timeouts.
    public func with(settings: Settings) -> OperatorConsole {
        OperatorConsole(
            settings: settings, emailSignIn: emailSignIn, passkeys: passkeys, clients: clients, introspection: introspection, realms: realms, families: families,
            operatorLogs: operatorLogs, admin: admin, pool: pool, now: now)
    }

    // MARK: Sign-in

    /// Sends a sign-in code when the address belongs to an operator-realm user; answers the
    /// same either way. Rate limited like the app endpoint (throws `RateLimited`).
    public func requestCode(email: String, source: String, metadata: EventMetadata) async throws {
        try await ServiceRefusal.translating {
            guard let realm = try await operatorRealm() else { return }
            do {
                // The code is the console's (issue 65): only the console client redeems it.
                try await emailSignIn().requestCode(
                    EmailSignInService.CodeRequest(email: email, source: source), endpoint: .otpRequest, realm: realm,
                    binding: FlowBinding(clientID: Self.clientID), metadata: metadata)
            } catch is EmailSignInService.InvalidEmailAddress {
                return  // the same answer as any address
            }
        }
    }

    /// Redeems a code; on success returns the new session's token (the cookie's value).
    /// Throws `OAuthError` for a wrong code and `NotAnOperator` for a user without the role.
    /// - Parameter totp: the authenticator code of an operator with two-factor on.
    public func signIn(email: String, code: String, totp: String? = nil, metadata: EventMetadata) async throws -> (token: String, session: Operator) {
        return try await ServiceRefusal.translating {
            guard let realm = try await operatorRealm() else { throw EmailSignInService.invalidCode }
            let client = try await clients.authenticate(realm: realm.realmID, clientID: Self.clientID, secret: nil)
            var grant = Self.grant(client: client, realm: realm, metadata: metadata)
            grant.totpCode = totp
            let response = try await emailSignIn().redeemCode(email: email, code: code, grant)
            return try await establish(response, realm: realm.realmID, metadata: metadata)
        }
    }

    /// The session of a sign-in the services granted: the user must hold the role, or the
    /// sign-in's family is revoked at once and `NotAnOperator` thrown.
    func establish(_ response: TokenResponse, realm: String, metadata: EventMetadata) async throws -> (token: String, session: Operator) {
        let introspection = try await self.introspection.introspect(realm: realm, token: response.accessToken)
        guard let subject = introspection.subject, let userID = UUID(uuidString: subject), let sid = introspection.sessionID,
            let familyID = UUID(uuidString: sid)
        else { throw EmailSignInService.invalidCode }
        let user = try await admin.users.state(realm: realm, id: userID)
        guard user.roles.contains(Self.role) else {
            _ = try await families.actor(for: StreamNames.tokenFamily(realm: realm, familyID: familyID))
                .execute(.revoke(.admin), now: now(), metadata: metadata)
            throw NotAnOperator()
        }
        let token = OpaqueToken.generate()
        try await ConsoleSessionsTable.insert(hash: token.hash, realm: realm, userID: userID, familyID: familyID, now: now(), pool: pool)
        return (token.token, Operator(realm: realm, userID: userID, familyID: familyID, csrfToken: Self.csrfToken(for: token.token)))
    }

    static func grant(client: AuthenticatedClient, realm: RealmDirectory.Entry, metadata: EventMetadata) -> UserGrantRequest {
        UserGrantRequest(
            client: client, scope: "openid", resources: [], totpCode: nil, issuer: realm.settings.publicBaseURL ?? "urn:modgud:console", metadata: metadata)
    }

    /// The operator of a live session, its idle clock restarted; nil for anything else.
    public func authenticate(token: String) async throws -> Operator? {
        return try await ServiceRefusal.translating {
            guard !token.isEmpty, token.utf8.count <= 200 else { return nil }
            guard
                let row = try await ConsoleSessionsTable.touch(
                    hash: OpaqueToken.hash(token), role: Self.role, now: now(), idle: settings.idleTimeout, absolute: settings.absoluteLifetime,
                    pool: pool)
            else { return nil }
            return Operator(realm: row.realm, userID: row.userID, familyID: row.familyID, csrfToken: Self.csrfToken(for: token))
        }
    }

    /// Ends a session and revokes its token family.
    public func signOut(token: String, metadata: EventMetadata) async throws {
        try await ServiceRefusal.translating {
            guard let (realm, familyID) = try await ConsoleSessionsTable.delete(hash: OpaqueToken.hash(token), pool: pool) else { return }
            _ = try await families.actor(for: StreamNames.tokenFamily(realm: realm, familyID: familyID))
                .execute(.revoke(.logout), now: now(), metadata: metadata)
        }
    }

    /// Records an action that changes no aggregate of its own (a rebuild, a retry) as an event
    /// in the operator's log, with the operator as actor.
    public func record(_ action: String, target: String, by session: Operator, metadata: EventMetadata) async throws {
        try await ServiceRefusal.translating {
            _ = try await operatorLogs.actor(for: StreamNames.operatorLog(realm: session.realm, userID: session.userID))
                .execute(.record(action: action, target: target), now: now(), metadata: metadata)
        }
    }

    /// Removes sessions idle past the timeout (the maintenance loop).
    public func pruneSessions() async throws -> Int {
        try await ServiceRefusal.translating {
            try await ConsoleSessionsTable.prune(before: now().addingTimeInterval(-settings.idleTimeout), pool: pool)
        }
    }

    /// The synchronizer token of a session (OWASP CSRF cheat sheet): an HMAC of a fixed label
    /// under the session token, so it is stored nowhere and useless without the cookie.
    public static func csrfToken(for sessionToken: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("modgud console csrf".utf8), using: SymmetricKey(data: Array(sessionToken.utf8)))
        return Base64URLText.encode(Array(mac))
    }

    func operatorRealm() async throws -> RealmDirectory.Entry? {
        guard let settings = try await realms.settings(realm: settings.realm) else { return nil }
        return RealmDirectory.Entry(realmID: self.settings.realm, settings: settings)
    }
}
