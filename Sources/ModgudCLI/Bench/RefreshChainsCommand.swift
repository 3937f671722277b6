import ArgumentParser
import Crypto
import Foundation
import ModgudClient
import NIOHTTP1
import WebAuthn

/// `modgud bench chains`: refresh-token chains through a server or load balancer, for
/// failure tests (`ops/cluster-test`). Each chain presents its token, keeps the new one on
/// 200, retries the same token after a transport error or a 5xx (as a naive app would), and
/// ends on 400 (the token was spent, say by an answer the client never saw). A line with a
/// DPoP key after the token (`bench sessions --dpop`) makes a bound chain: each refresh
/// carries a new proof by that key, with the server's latest nonce, and a `use_dpop_nonce`
/// answer is retried with the nonce it brings.
struct RefreshChainsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chains",
        abstract: "Drive refresh-token chains against --url for --seconds; print a JSON report.",
        discussion: """
            Reads one refresh token per line from --tokens. Writes the SHA-256 (base64url, as the server stores it) of every \
            refresh token received in a 200 to --received, one per line, so a test can check that the server knows each one.
            """)

    @Option(help: "Server or load balancer, http://HOST:PORT.") var url: String
    @Option(help: "The Host header: a host of the realm.") var host = "localhost"
    @Option(help: "The public client's id.") var clientID = "app"
    @Option(help: "File with one refresh token per line (one chain each).") var tokens: String
    @Option(help: "How long to run.") var seconds = 10.0
    @Option(help: "Where to write the hashes of received refresh tokens.") var received: String?

    struct Report: Encodable {
        var requests = 0
        var ok = 0
        /// 4xx answers: the chain ended.
        var ended = 0
        /// 5xx answers and transport errors (each retried).
        var failed = 0
        var statuses: [String: Int] = [:]
        /// `use_dpop_nonce` answers (each retried with the nonce; not an end).
        var nonceRetries = 0
        var okAfterFirstFailure = 0
        /// The longest time in which no chain got a 200: the outage as the clients saw it.
        var longestSecondsWithoutSuccess = 0.0
        var p50Milliseconds = 0.0
        var p99Milliseconds = 0.0
    }

    func run() async throws {
        guard let parsed = URL(string: url), let address = parsed.host, let port = parsed.port else {
            throw ValidationError("--url must be http://HOST:PORT")
        }
        let chains = try String(contentsOfFile: tokens, encoding: .utf8).split(separator: "\n").map(String.init).filter { !$0.isEmpty }
            .map(Chain.init(line:))
        let connection = LoadHTTPConnection(host: address, port: port, authority: host)
        let tokenEndpoint = chains.contains { $0.key != nil } ? try await Self.tokenEndpoint(connection) : nil
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        let clientID = self.clientID
        let outcomes = try await withThrowingTaskGroup(of: ChainOutcome.self) { group in
            for chain in chains {
                group.addTask { await Self.drive(chain, clientID: clientID, tokenEndpoint: tokenEndpoint, connection: connection, until: deadline) }
            }
            return try await group.reduce(into: [ChainOutcome]()) { $0.append($1) }
        }
        var report = Report()
        var latencies: [Double] = []
        var received: [String] = []
        var firstFailure: ContinuousClock.Instant?
        for outcome in outcomes {
            received += outcome.received
            latencies += outcome.latencies
            for (status, count) in outcome.statuses { report.statuses[status, default: 0] += count }
            if let failure = outcome.firstFailure, firstFailure.map({ failure < $0 }) ?? true { firstFailure = failure }
        }
        for outcome in outcomes {
            for (at, _) in outcome.okTimes where firstFailure.map({ at > $0 }) ?? false {
                report.okAfterFirstFailure += 1
            }
        }
        report.requests = report.statuses.values.reduce(0, +)
        report.ok = report.statuses["200"] ?? 0
        report.failed = report.statuses.filter { $0.key == "error" || $0.key.hasPrefix("5") }.values.reduce(0, +)
        report.nonceRetries = report.statuses["use_dpop_nonce"] ?? 0
        report.ended = report.requests - report.ok - report.failed - report.nonceRetries
        let successes = outcomes.flatMap { $0.okTimes.map(\.0) }.sorted()
        for (earlier, later) in zip(successes, successes.dropFirst()) {
            let gap = later - earlier
            report.longestSecondsWithoutSuccess = max(
                report.longestSecondsWithoutSuccess, Double(gap.components.seconds) + Double(gap.components.attoseconds) / 1e18)
        }
        latencies.sort()
        if !latencies.isEmpty {
            report.p50Milliseconds = latencies[latencies.count / 2]
            report.p99Milliseconds = latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
        }
        if let path = self.received {
            try (received.map(Self.storedHash).joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print(String(decoding: try encoder.encode(report), as: UTF8.self))
    }

    struct ChainOutcome: Sendable {
        var statuses: [String: Int] = [:]
        var received: [String] = []
        var latencies: [Double] = []
        var firstFailure: ContinuousClock.Instant?
        var okTimes: [(ContinuousClock.Instant, Int)] = []
    }

    /// A line of `--tokens`: a refresh token, and for a bound session its DPoP key.
    struct Chain: Sendable {
        var token: String
        var key: SoftwareDPoPKey?

        init(line: String) {
            let parts = line.split(separator: " ")
            token = String(parts[0])
            key = parts.count > 1 ? Base64URL.decode(parts[1]).flatMap { try? SoftwareDPoPKey(rawRepresentation: Data($0)) } : nil
        }
    }

    /// The token endpoint's URL as the server names it (what a proof's `htu` must match).
    static func tokenEndpoint(_ connection: LoadHTTPConnection) async throws -> URL {
        let reply = try await connection.session { send in try await send(.GET, "/.well-known/openid-configuration", nil, "") }
        guard reply.status == 200, let json = try? JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any],
            let endpoint = (json["token_endpoint"] as? String).flatMap(URL.init(string:))
        else { throw ValidationError("no token_endpoint in the server's discovery document (status \(reply.status))") }
        return endpoint
    }

    static func drive(_ chain: Chain, clientID: String, tokenEndpoint: URL?, connection: LoadHTTPConnection, until deadline: ContinuousClock.Instant)
        async -> ChainOutcome
    {
        var outcome = ChainOutcome()
        var token = chain.token
        var nonce: String?
        var ended = false
        while !ended && ContinuousClock.now < deadline {
            do {
                try await connection.session { send in
                    while !ended && ContinuousClock.now < deadline {
                        let started = ContinuousClock.now
                        var headers: [(String, String)] = []
                        if let key = chain.key, let tokenEndpoint {
                            headers.append(("DPoP", try key.proof(method: "POST", url: tokenEndpoint, nonce: nonce)))
                        }
                        let reply = try await send(
                            .POST, "/connect/token", "application/x-www-form-urlencoded",
                            "grant_type=refresh_token&client_id=\(clientID)&refresh_token=\(token)", headers: headers)
                        nonce = reply.headers.first(name: "DPoP-Nonce") ?? nonce
                        let elapsed = ContinuousClock.now - started
                        outcome.latencies.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000)
                        if reply.status == 400, chain.key != nil, Self.asksForNonce(reply) {
                            outcome.statuses["use_dpop_nonce", default: 0] += 1
                            continue
                        }
                        outcome.statuses[String(reply.status), default: 0] += 1
                        switch reply.status {
                        case 200:
                            let json = try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any]
                            guard let next = json?["refresh_token"] as? String else { throw LoadHTTPConnection.Broken() }
                            token = next
                            outcome.received.append(next)
                            outcome.okTimes.append((ContinuousClock.now, 1))
                        case 500...599:
                            if outcome.firstFailure == nil { outcome.firstFailure = ContinuousClock.now }
                            try await Task.sleep(for: .milliseconds(50))
                        default:
                            ended = true
                        }
                    }
                }
            } catch {
                outcome.statuses["error", default: 0] += 1
                if outcome.firstFailure == nil { outcome.firstFailure = ContinuousClock.now }
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        return outcome
    }

    static func asksForNonce(_ reply: LoadHTTPConnection.Reply) -> Bool {
        ((try? JSONSerialization.jsonObject(with: Data(reply.body))) as? [String: Any])?["error"] as? String == "use_dpop_nonce"
    }

    /// base64url(SHA-256(token)), unpadded: how the server stores a refresh token.
    static func storedHash(_ token: String) -> String {
        Data(SHA256.hash(data: Array(token.utf8))).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
