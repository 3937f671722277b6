import Foundation
import ModgudClient
import NIOHTTP1
import Synchronization
import WebAuthn
import WebAuthnTesting

/// One kind of request `modgud bench load` drives, and how a connection repeats it.
enum LoadScenario: String, CaseIterable, Sendable {
    case discovery, jwks
    case passkeyBegin = "passkey-begin"
    case passkey, refresh, otp, magic
    /// Refresh of DPoP-bound sessions (issue 29): a new proof by the session's key each time.
    case refreshDPoP = "refresh-dpop"
    /// Refresh by an attested app instance (issue 47): the Client Attestation JWT and a new PoP
    /// each time, against `refresh`: the cost of attestation per request.
    case refreshAttested = "refresh-attested"
    case clientCredentials = "client-credentials"
    case introspect
    /// Passkey sign-up (issue 14): begin with a new address, attest, redeem.
    case passkeySignUp = "passkey-signup"
    /// A code asked for a new address (issue 67): the uniform answer after the anti-enumeration
    /// jitter, so its rate is the jitter's; its database cost per request is the figure, the
    /// per-mailbox cap counted in the logged `rate_limits_durable`.
    case otpRequest = "otp-request"
    /// The same with that table made UNLOGGED for the run, as before issue 67 (and made logged
    /// again after it): alternated with `otp-request` in one run, the cost of durable caps.
    case otpRequestVolatile = "otp-request-volatile"
    /// Refresh with the per-source and per-client brakes' table made LOGGED for the run (issue
    /// 67): alternated with `refresh`, why those brakes stay UNLOGGED.
    case refreshLoggedBrakes = "refresh-logged-brakes"

    /// Refresh with the rows updated in place on its path (a stream's version, a rate-limit
    /// bucket) given free room on their pages (issue 70): whether HOT updates pay.
    case refreshFillfactor = "refresh-fillfactor"
    /// Refresh with the b-tree on access tokens by user put back (issue 70 dropped it: no query
    /// reads it): what that index cost every grant.
    case refreshUserIndex = "refresh-user-index"
    /// Refresh without the BRIN indexes on token expiry (issue 70 added them for pruning).
    case refreshNoExpiryIndex = "refresh-no-expiry-index"
    /// Refresh with full-page images in the WAL compressed (`wal_compression = lz4`).
    case refreshWALCompression = "refresh-wal-compression"

    /// The SQL a lever scenario runs before it (and after it, to undo it): the A/B scenarios of
    /// issues 67 and 70, each alternated with its plain scenario in one run, on the bench's own
    /// cluster only.
    var schemaSwitch: (during: [String], after: [String])? {
        switch self {
        case .otpRequestVolatile: (["ALTER TABLE rate_limits_durable SET UNLOGGED"], ["ALTER TABLE rate_limits_durable SET LOGGED"])
        case .refreshLoggedBrakes: (["ALTER TABLE rate_limits SET LOGGED"], ["ALTER TABLE rate_limits SET UNLOGGED"])
        case .refreshFillfactor:
            (
                ["streams", "rate_limits"].map { "ALTER TABLE \($0) SET (fillfactor = 70)" },
                ["streams", "rate_limits"].map { "ALTER TABLE \($0) RESET (fillfactor)" }
            )
        case .refreshUserIndex:
            (["CREATE INDEX access_tokens_user ON access_tokens (realm_id, user_id)"], ["DROP INDEX access_tokens_user"])
        case .refreshNoExpiryIndex:
            (
                ["DROP INDEX access_tokens_expiry", "DROP INDEX refresh_tokens_expiry"],
                [
                    "CREATE INDEX access_tokens_expiry ON access_tokens USING brin (expires_at)",
                    "CREATE INDEX refresh_tokens_expiry ON refresh_tokens USING brin (expires_at)",
                ]
            )
        case .refreshWALCompression:
            (
                ["ALTER SYSTEM SET wal_compression = 'lz4'", "SELECT pg_reload_conf()"],
                ["ALTER SYSTEM RESET wal_compression", "SELECT pg_reload_conf()"]
            )
        default: nil
        }
    }

    /// The floor (issue 49; `BenchFloor`): a bare route that parses the form, signs one ES256
    /// JWT and commits one row with group commit, on a server of its own; and its parts.
    case floor
    case floorBare = "floor-bare"
    case floorSign = "floor-sign"
    case floorCommit = "floor-commit"

    /// The floor's scenarios, driven against the floor server (`buildBenchFloorApplication`).
    var isFloor: Bool { [.floor, .floorBare, .floorSign, .floorCommit].contains(self) }

    /// The floor route a floor scenario posts to.
    var floorPath: String {
        switch self {
        case .floorBare: "/floor/bare"
        case .floorSign: "/floor/sign"
        case .floorCommit: "/floor/commit"
        default: "/floor/grant"
        }
    }

    /// What the report calls one unit of work.
    var unit: String {
        switch self {
        case .discovery, .jwks, .passkeyBegin, .introspect: "requests"
        case .passkey: "sign-ins (begin + redeem)"
        case .passkeySignUp: "sign-ups (begin + redeem)"
        case .otpRequest, .otpRequestVolatile: "requests"
        default: "grants"
        }
    }
}

/// Sends one request on a kept-alive connection.
typealias LoadSend = LoadHTTPConnection.Sender

/// The outcome of one step of a worker.
enum LoadStep {
    /// A request (or a sign-in of several) that answered `status`; success is `expected`.
    case answered(status: Int, expected: Int)
    /// Nothing prepared is left for this worker.
    case exhausted
}

/// Work handed out to every connection of a scenario: each item once.
final class LoadQueue<Item: Sendable>: Sendable {
    private let items: [Item]
    private let next = Atomic<Int>(0)

    init(_ items: [Item]) { self.items = items }

    func take() -> Item? {
        let index = next.add(1, ordering: .relaxed).oldValue
        return index < items.count ? items[index] : nil
    }
}

/// One connection's state in a scenario, and its step.
enum LoadWorker: Sendable {
    static let form = "application/x-www-form-urlencoded"

    case get(path: String)
    /// A form POST that answers 200 (the floor's routes).
    case post(path: String, clientID: String)
    case passkey(clientID: String, credential: SoftwareCredential, origin: String)
    case refresh(clientID: String, token: String)
    case refreshDPoP(clientID: String, token: String, key: SoftwareDPoPKey, endpoint: URL, nonce: String?)
    case refreshAttested(clientID: String, token: String, attestation: String, key: SoftwareDPoPKey, issuer: String)
    case otp(clientID: String, codes: LoadQueue<(email: String, code: String)>)
    case magic(clientID: String, links: LoadQueue<(userID: String, token: String)>)
    case clientCredentials(clientID: String, secret: String)
    case introspect(clientID: String, secret: String, token: String)
    case passkeySignUp(clientID: String, origin: String)
    case otpRequest

    /// A passkey sign-in: begin, an assertion by `credential` (its counter moves), the grant.
    static func passkeySignIn(_ send: LoadSend, clientID: String, credential: inout SoftwareCredential, origin: String) async throws -> LoadStep {
        let begun = try await send(.POST, "/connect/passkey/begin", Self.form, Self.encode(["client_id": clientID]))
        guard begun.status == 200, let ceremony = try? JSONDecoder().decode(Begun.self, from: Data(begun.body)),
            let challenge = Base64URL.decode(ceremony.options.challenge)
        else { return .answered(status: begun.status == 200 ? 0 : begun.status, expected: 200) }
        let assertion = SoftwareAuthenticator().assert(&credential, .init(challenge: challenge, origin: origin))
        let reply = try await send(
            .POST, "/connect/token", Self.form,
            Self.encode([
                "grant_type": "urn:cocoar:passkey", "client_id": clientID, "ceremony_id": ceremony.ceremonyId,
                "assertion": String(decoding: assertion.json, as: UTF8.self), "scope": "openid offline_access",
            ]))
        return .answered(status: reply.status, expected: 200)
    }

    mutating func step(_ send: LoadSend) async throws -> LoadStep {
        switch self {
        case .get(let path):
            return .answered(status: try await send(.GET, path, nil, "").status, expected: 200)
        case .post(let path, let clientID):
            return .answered(status: try await send(.POST, path, Self.form, Self.encode(["client_id": clientID])).status, expected: 200)
        case .passkey(let clientID, var credential, let origin):
            let step = try await Self.passkeySignIn(send, clientID: clientID, credential: &credential, origin: origin)
            self = .passkey(clientID: clientID, credential: credential, origin: origin)
            return step
        case .refresh(let clientID, let token):
            let (step, next) = try await Self.refresh(send, clientID: clientID, token: token, headers: [])
            self = .refresh(clientID: clientID, token: next)
            return step
        case .refreshDPoP(let clientID, let token, let key, let endpoint, let nonce):
            let reply = try await send(
                .POST, "/connect/token", Self.form, Self.encode(["grant_type": "refresh_token", "client_id": clientID, "refresh_token": token]),
                headers: [("DPoP", try key.proof(method: "POST", url: endpoint, nonce: nonce))])
            let next = reply.status == 200 ? (try? JSONDecoder().decode(Tokens.self, from: Data(reply.body)))?.refresh_token : nil
            self = .refreshDPoP(
                clientID: clientID, token: next ?? token, key: key, endpoint: endpoint, nonce: reply.headers.first(name: "DPoP-Nonce") ?? nonce)
            return .answered(status: reply.status, expected: 200)
        case .refreshAttested(let clientID, let token, let attestation, let key, let issuer):
            let headers = try ClientAttestationProof.headers(attestation: attestation, signer: key, audience: issuer)
            let (step, next) = try await Self.refresh(send, clientID: clientID, token: token, headers: headers)
            self = .refreshAttested(clientID: clientID, token: next, attestation: attestation, key: key, issuer: issuer)
            return step
        case .otp(let clientID, let codes):
            guard let item = codes.take() else { return .exhausted }
            return try await Self.signIn(
                send, ["grant_type": "urn:cocoar:otp", "client_id": clientID, "username": item.email, "otp_code": item.code])
        case .magic(let clientID, let links):
            guard let item = links.take() else { return .exhausted }
            return try await Self.signIn(
                send, ["grant_type": "urn:cocoar:magic", "client_id": clientID, "user_id": item.userID, "magic_token": item.token])
        case .clientCredentials(let clientID, let secret):
            let reply = try await send(
                .POST, "/connect/token", Self.form,
                Self.encode(["grant_type": "client_credentials", "client_id": clientID, "client_secret": secret]))
            return .answered(status: reply.status, expected: 200)
        case .introspect(let clientID, let secret, let token):
            let reply = try await send(
                .POST, "/connect/introspect", Self.form, Self.encode(["client_id": clientID, "client_secret": secret, "token": token]))
            // An inactive answer is a 200 too: count only an active one as a success.
            let active = reply.status == 200 && (try? JSONDecoder().decode(Introspected.self, from: Data(reply.body)))?.active == true
            return .answered(status: active ? 200 : (reply.status == 200 ? 0 : reply.status), expected: 200)
        case .passkeySignUp(let clientID, let origin):
            return try await Self.signUp(send, clientID: clientID, origin: origin)
        case .otpRequest:
            let address = "request-\(UUID().uuidString.lowercased())@load.test"
            let reply = try await send(.POST, "/api/account/native/otp/request", "application/json", #"{"Email":"\#(address)"}"#)
            return .answered(status: reply.status, expected: 200)
        }
    }

    /// One refresh with `headers`: its outcome and the token to refresh with next.
    private static func refresh(_ send: LoadSend, clientID: String, token: String, headers: [(String, String)]) async throws -> (LoadStep, String) {
        let reply = try await send(
            .POST, "/connect/token", form, encode(["grant_type": "refresh_token", "client_id": clientID, "refresh_token": token]), headers: headers)
        let next = reply.status == 200 ? (try? JSONDecoder().decode(Tokens.self, from: Data(reply.body)))?.refresh_token : nil
        return (.answered(status: reply.status, expected: 200), next ?? token)
    }

    /// One passkey sign-up: begin for a fresh address, a new credential, the redemption.
    private static func signUp(_ send: LoadSend, clientID: String, origin: String) async throws -> LoadStep {
        let address = "signup-\(UUID().uuidString.lowercased())@load.test"
        let begun = try await send(.POST, "/connect/passkey/register/begin", "application/json", #"{"ClientId":"\#(clientID)","Email":"\#(address)"}"#)
        guard begun.status == 200, let ceremony = try? JSONDecoder().decode(SignUpBegun.self, from: Data(begun.body)),
            let challenge = Base64URL.decode(ceremony.options.challenge), let handle = Base64URL.decode(ceremony.options.user.id)
        else { return .answered(status: begun.status == 200 ? 0 : begun.status, expected: 200) }
        let credential = SoftwareCredential(rpID: ceremony.options.rp.id, userHandle: handle)
        let attestation = SoftwareAuthenticator().register(credential, .init(challenge: challenge, origin: origin))
        let reply = try await send(
            .POST, "/connect/token", form,
            encode([
                "grant_type": "urn:cocoar:passkey", "client_id": clientID, "ceremony_id": ceremony.ceremonyId,
                "attestation": String(decoding: attestation.json, as: UTF8.self), "scope": "openid offline_access",
            ]))
        return .answered(status: reply.status, expected: 200)
    }

    private struct SignUpBegun: Decodable {
        struct Options: Decodable {
            struct RP: Decodable { var id: String }
            struct User: Decodable { var id: String }
            var challenge: String
            var rp: RP
            var user: User
        }
        var ceremonyId: String
        var options: Options
    }

    /// One passwordless grant with scope `openid offline_access`.
    private static func signIn(_ send: LoadSend, _ fields: [String: String]) async throws -> LoadStep {
        let reply = try await send(.POST, "/connect/token", form, encode(fields.merging(["scope": "openid offline_access"]) { old, _ in old }))
        return .answered(status: reply.status, expected: 200)
    }

    private struct Begun: Decodable {
        struct Options: Decodable { var challenge: String }
        var ceremonyId: String
        var options: Options
    }

    private struct Tokens: Decodable { var refresh_token: String? }
    private struct Introspected: Decodable { var active: Bool }

    /// application/x-www-form-urlencoded (WHATWG URL section 5.2), keys sorted for stable bodies.
    static func encode(_ fields: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.sorted { $0.key < $1.key }.map { key, value in
            "\(key)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&")
    }
}
