import Foundation
import MailTestSupport

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `Tests/Support/id_provider.py` in a child process (issue 48): Apple's and Google's JWKS over a
/// socket, and ID tokens in their claim shapes, signed by keys Modgud's code never made.
final class StandInProvider: @unchecked Sendable {
    let port: Int
    private let process: Process
    private let input: Pipe
    /// One for every stand-in: a URLSession holds file descriptors until it is invalidated,
    /// and the test process's children (PostgreSQL) inherit whatever is open.
    private static let sharedSession = URLSession(configuration: .ephemeral)
    private var session: URLSession { Self.sharedSession }

    init() throws {
        let port = try SMTPSink.freePort()
        let started = try PythonScript.spawn("id_provider.py", ["--port", String(port)])
        (process, input) = (started.process, started.input)
        self.port = port
    }

    /// Terminated, not waited out on its standard input: a child process started later (the
    /// SMTP sink) may hold the pipe's other end.
    deinit {
        try? input.fileHandleForWriting.close()
        process.terminate()
        process.waitUntilExit()
    }

    var appleJWKS: String { "http://127.0.0.1:\(port)/apple/auth/keys" }
    var googleJWKS: String { "http://127.0.0.1:\(port)/google/oauth2/v3/certs" }

    /// An ID token of `provider` (`apple` or `google`): its defaults, with `claims` over them
    /// (`NSNull()` leaves a claim out; `_kid`, `_alg`, `_key` shape the signature).
    func mint(_ provider: String, _ claims: [String: Any] = [:]) async throws -> String {
        let answer = try await post("/\(provider)/mint", claims)
        guard let token = answer["id_token"] as? String else { throw ReceiverError("no id_token: \(answer)") }
        return token
    }

    /// A server-to-server notification as Apple posts it: the `payload` JWS, whose `events`
    /// string carries `type` and `sub` (`_aud`, `_iat`, `_jti`, `_key` shape it).
    func appleNotification(_ body: [String: Any]) async throws -> String {
        let answer = try await post("/apple/notify", body)
        guard let payload = answer["payload"] as? String else { throw ReceiverError("no payload: \(answer)") }
        return payload
    }

    var appleTokenURL: String { "http://127.0.0.1:\(port)/apple/auth/token" }

    /// The team's Sign in with Apple key, as Apple hands it out: team id, key id, .p8 PEM.
    func teamKey() async throws -> (teamID: String, keyID: String, pem: String) {
        let (data, _) = try await session.data(from: URL(string: "http://127.0.0.1:\(port)/apple/team-key")!)
        let key = try JSONSerialization.jsonObject(with: data) as? [String: String] ?? [:]
        guard let team = key["team_id"], let id = key["key_id"], let pem = key["private_key"] else { throw ReceiverError("no team key: \(key)") }
        return (team, id, pem)
    }

    /// An authorization code whose redemption at the stand-in's token endpoint mints an Apple
    /// ID token with `claims` over the defaults.
    func appleCode(_ claims: [String: Any] = [:]) async throws -> String {
        let answer = try await post("/apple/code", claims)
        guard let code = answer["code"] as? String else { throw ReceiverError("no code: \(answer)") }
        return code
    }

    /// How many codes the token endpoint redeemed and refused.
    func redemptions() async throws -> [String: Int] {
        let (data, _) = try await session.data(from: URL(string: "http://127.0.0.1:\(port)/apple/redemptions")!)
        return try JSONSerialization.jsonObject(with: data) as? [String: Int] ?? [:]
    }

    /// Publishes `provider`'s second key (kid `<provider>-rotated`).
    func rotate(_ provider: String) async throws {
        _ = try await post("/\(provider)/rotate", [:])
    }

    /// How often each JWKS was fetched.
    func fetches() async throws -> [String: Int] {
        let (data, _) = try await session.data(from: URL(string: "http://127.0.0.1:\(port)/fetches")!)
        return try JSONSerialization.jsonObject(with: data) as? [String: Int] ?? [:]
    }

    private func post(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = "POST"
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        let (data, _) = try await session.data(for: request)
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }
}
