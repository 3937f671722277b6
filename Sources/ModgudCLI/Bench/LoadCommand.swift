import ArgumentParser
import Crypto
import EmbeddedPostgres
import EventStorePostgres
import Foundation
import ModgudService
import PQ

/// `modgud bench load`: the token endpoint and its neighbours under load, measured from
/// outside over real sockets, with what each grant costs the database.
struct LoadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Drive each grant at a concurrency for a time; print rates, latencies and database cost per grant.",
        discussion: """
            Without --url it starts a private durable PostgreSQL (fsync on, pg_stat_statements loaded) and a `modgud serve` \
            child process on loopback, and removes both afterwards. With --url it drives that server and prepares its \
            material through --database-url (the server's database) and MODGUD_MASTER_KEY (the server's key). The \
            realm `bench` (host bench.load.test) has every rate limit lifted. Build with -c release for figures worth \
            comparing (BENCHMARKS.md).
            """)

    @Option(help: "A running server, http://HOST:PORT (default: start one).") var url: String?
    @Option(name: .customLong("database-url"), help: "The running server's database (with --url).") var databaseURL: String?
    @Option(help: "Scenarios, comma-separated: \(LoadScenario.allCases.map(\.rawValue).joined(separator: ",")).")
    var scenarios = LoadScenario.allCases.filter { $0.schemaSwitch == nil }.map(\.rawValue).joined(separator: ",")
    @Option(help: "Concurrent keep-alive connections.") var connections = 32
    @Option(help: "Seconds per scenario.") var seconds = 10.0
    @Option(help: "Requests per second in all, paced (default: as fast as answers come).") var rate: Double?
    @Option(help: "Seconds of unmeasured load first (opens the server's pool connections and prepares its statements).")
    var warmup = 1.0
    @Option(help: "Codes and links prepared per second of an otp or magic run (the run ends early when they run out).")
    var preparedPerSecond = 2500.0
    @Option(help: "Folder for the embedded cluster and the server's log (a run folder inside is removed afterwards).")
    var dataDir = "/var/tmp/modgud-bench"
    @Option(help: "Database pool size of the started server (MODGUD_DB_POOL_SIZE).") var poolSize = 32
    @Option(help: "shared_buffers of the started PostgreSQL (default: PostgreSQL's own).") var sharedBuffers = "128MB"
    @Option(help: "Client addresses the connections claim by X-Forwarded-For (the started server trusts the loopback as its proxy); 1: all are the loopback.")
    var sources = 1
    @Flag(help: "Allowlist the bench's sources in every rate-limit policy, so that nothing is counted (the count's cost, as an A/B).")
    var uncounted = false
    @Option(name: .customLong("uncounted-policy"), help: "Like --uncounted for this policy only (token.client, …); repeatable.")
    var uncountedPolicies: [String] = []
    @Option(help: "Also print the N statements called most per operation (pg_stat_statements).") var statements = 0
    @Flag(help: "Keep the run folder (the server's log) afterwards.") var keep = false
    @Flag(help: "Exit with status 1 when any request failed (for CI smoke runs).") var failOnErrors = false

    func run() async throws {
        let selected = try scenarios.split(separator: ",").map { name in
            guard let scenario = LoadScenario(rawValue: String(name)) else { throw ValidationError("unknown scenario \(name)") }
            return scenario
        }
        guard connections > 0, seconds > 0, sources > 0, sources <= 65536 else {
            throw ValidationError("--connections and --seconds must be positive, --sources between 1 and 65536")
        }
        if let unknown = uncountedPolicies.first(where: { RateLimitPolicy.named($0) == nil }) {
            throw ValidationError("no rate-limit policy named \(unknown)")
        }
        let environment = try await LoadEnvironment.open(self)
        var failures = 0
        do {
            var fixtures = environment.fixtures
            try await fixtures.prepareRealm(
                allowlist: uncounted || !uncountedPolicies.isEmpty ? [Self.loopback, Self.claimedSources] : [],
                policies: uncounted ? nil : Set(uncountedPolicies))
            if let server = environment.server { try await server.waitUntilReady() }
            let counting = uncounted ? ", nothing rate-counted" : uncountedPolicies.isEmpty ? "" : ", \(uncountedPolicies.joined(separator: ",")) not counted"
            emit("modgud bench load — \(connections) connections from \(sources) source(s)\(counting), \(seconds) s per scenario\(rate.map { ", paced at \(Int($0))/s" } ?? "")")
            emit(LoadReport.header)
            // The floor first (issue 49), on its own server: every other rate is printed as a
            // fraction of it.
            var floorRate: Double?
            if selected.contains(where: \.isFloor) {
                let floor = try await environment.floor(poolSize: poolSize)
                defer { floor.server?.stop() }
                for scenario in selected where scenario.isFloor {
                    var report = try await measure(scenario, fixtures: fixtures, environment: floor)
                    if scenario == .floor { floorRate = report.rate }
                    report.floorRate = floorRate
                    emit(report.line)
                    failures += report.statistics.failed
                }
            }
            for scenario in selected where !scenario.isFloor {
                var report = try await measure(scenario, fixtures: fixtures, environment: environment)
                report.floorRate = floorRate
                emit(report.line)
                for line in report.topStatements(statements) { emit(line) }
                failures += report.statistics.failed
            }
        } catch {
            await environment.close(keep: true)
            throw error
        }
        await environment.close(keep: keep)
        if failOnErrors && failures > 0 { throw CommandError("\(failures) requests failed") }
    }

    static let loopback = "127.0.0.1"
    /// The network the connections' claimed addresses come from (`--sources`).
    static let claimedSources = "10.77.0.0/16"

    /// The address connection `index` claims through `X-Forwarded-For`: one of `--sources`
    /// addresses in `claimedSources`, or none (the loopback itself) with one source.
    func claimedSource(connection index: Int) -> String? {
        guard sources > 1 else { return nil }
        let host = index % sources
        return "10.77.\(host / 256).\(host % 256)"
    }

    /// One line to standard output at once (print is buffered when piped).
    private func emit(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    func measure(_ scenario: LoadScenario, fixtures: LoadFixtureSet, environment: LoadEnvironment) async throws -> LoadReport {
        // The A/B scenarios of issues 67 and 70: a schema or setting changed for this run only.
        guard let change = scenario.schemaSwitch else { return try await measureAsIs(scenario, fixtures: fixtures, environment: environment) }
        guard environment.cluster != nil else { throw CommandError("\(scenario.rawValue) alters the schema: only on the bench's own cluster, not with --url") }
        for statement in change.during { _ = try await environment.pool.query(PQQuery(statement)) }
        do {
            let report = try await measureAsIs(scenario, fixtures: fixtures, environment: environment)
            for statement in change.after { _ = try await environment.pool.query(PQQuery(statement)) }
            return report
        } catch {
            for statement in change.after { _ = try? await environment.pool.query(PQQuery(statement)) }
            throw error
        }
    }

    private func measureAsIs(_ scenario: LoadScenario, fixtures: LoadFixtureSet, environment: LoadEnvironment) async throws -> LoadReport {
        var workers = try await prepare(scenario, fixtures: fixtures, connection: environment.connection)
        if warmup > 0 {
            (_, workers) = await drive(workers, connection: environment.connection, until: .now + .milliseconds(Int64(warmup * 1000)))
        }
        let before = try await environment.sample(perStatement: statements > 0)
        let started = ContinuousClock.now
        // The audit log integrator's lag (events committed, not yet leaves), sampled twice a second.
        let lagSampler = Task {
            var largest = 0
            let reader = AuditLogReader(pool: environment.pool)
            while !Task.isCancelled {
                largest = max(largest, (try? await reader.lag()) ?? 0)
                try? await Task.sleep(for: .milliseconds(500))
            }
            return largest
        }
        let (statistics, _) = await drive(workers, connection: environment.connection, until: started + .milliseconds(Int64(seconds * 1000)))
        let elapsed = min(ContinuousClock.now - started, .milliseconds(Int64(seconds * 1000)))
        lagSampler.cancel()
        let auditLag = await lagSampler.value
        let after = try await environment.sample(perStatement: statements > 0)
        return LoadReport(
            scenario: scenario, statistics: statistics, seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            before: before, after: after, auditLag: auditLag)
    }

    private func prepare(_ scenario: LoadScenario, fixtures: LoadFixtureSet, connection: LoadHTTPConnection) async throws -> [LoadWorker] {
        let app = LoadFixtureSet.appClient
        let prepared = max(connections, Int((seconds + warmup) * preparedPerSecond))
        switch scenario {
        case .floor, .floorBare, .floorSign, .floorCommit: return Array(repeating: .post(path: scenario.floorPath, clientID: app), count: connections)
        case .discovery: return Array(repeating: .get(path: "/.well-known/openid-configuration"), count: connections)
        case .jwks: return Array(repeating: .get(path: "/.well-known/jwks.json"), count: connections)
        case .passkeyBegin: return Array(repeating: .post(path: "/connect/passkey/begin", clientID: app), count: connections)
        case .passkeySignUp: return Array(repeating: .passkeySignUp(clientID: app, origin: LoadFixtureSet.origin), count: connections)
        case .otpRequest, .otpRequestVolatile: return Array(repeating: .otpRequest, count: connections)
        case .passkey:
            return try await fixtures.passkeys(connections).map { .passkey(clientID: app, credential: $0, origin: LoadFixtureSet.origin) }
        case .refresh, .refreshLoggedBrakes, .refreshFillfactor, .refreshUserIndex, .refreshNoExpiryIndex, .refreshWALCompression:
            return try await fixtures.refreshTokens(connections).map { .refresh(clientID: app, token: $0.token) }
        case .refreshDPoP:
            let endpoint = try await RefreshChainsCommand.tokenEndpoint(connection)
            return try await fixtures.refreshTokens(connections, dpop: true).map {
                .refreshDPoP(clientID: app, token: $0.token, key: $0.key!, endpoint: endpoint, nonce: nil)
            }
        case .refreshAttested:
            let (attestation, key) = try await fixtures.clientAttestation()
            return try await fixtures.refreshTokens(connections, clientID: LoadFixtureSet.attestedClient).map {
                .refreshAttested(clientID: LoadFixtureSet.attestedClient, token: $0.token, attestation: attestation, key: key, issuer: LoadFixtureSet.issuer)
            }
        case .otp:
            let queue = LoadQueue(try await fixtures.registrationCodes(prepared))
            return Array(repeating: .otp(clientID: app, codes: queue), count: connections)
        case .magic:
            let queue = LoadQueue(try await fixtures.magicLinks(prepared))
            return Array(repeating: .magic(clientID: app, links: queue), count: connections)
        case .clientCredentials:
            return Array(repeating: .clientCredentials(clientID: LoadFixtureSet.serviceClient, secret: fixtures.serviceSecret), count: connections)
        case .introspect:
            let token = try await fixtures.accessToken()
            return Array(
                repeating: .introspect(clientID: LoadFixtureSet.serviceClient, secret: fixtures.serviceSecret, token: token), count: connections)
        }
    }

    /// Runs every worker on its own connection until `deadline` (or until its material runs
    /// out); a broken connection is counted as an error and opened again. Returns the
    /// statistics and the workers as they ended (a refresh chain's current token, say).
    private func drive(_ workers: [LoadWorker], connection: LoadHTTPConnection, until deadline: ContinuousClock.Instant) async
        -> (LoadStatistics, [LoadWorker])
    {
        let interval = rate.map { Duration.seconds(Double(workers.count) / $0) }
        return await withTaskGroup(of: (Int, LoadStatistics, LoadWorker).self) { group in
            for (index, initial) in workers.enumerated() {
                group.addTask {
                    var worker = initial
                    var statistics = LoadStatistics()
                    // Paced runs spread the connections' first requests over one interval.
                    var next = ContinuousClock.now + (interval.map { $0 * Double(index) / Double(workers.count) } ?? .zero)
                    var exhausted = false
                    while !exhausted && ContinuousClock.now < deadline {
                        do {
                            exhausted = try await connection.session(forwardedFor: claimedSource(connection: index)) { send in
                                while ContinuousClock.now < deadline {
                                    if let interval {
                                        try await Task.sleep(until: next, clock: .continuous)
                                        next += interval
                                    }
                                    let sent = ContinuousClock.now
                                    switch try await worker.step(send) {
                                    case .exhausted: return true
                                    case .answered(let status, let expected):
                                        let took = ContinuousClock.now - sent
                                        statistics.record(
                                            status: status, expected: expected,
                                            milliseconds: Double(took.components.seconds) * 1000 + Double(took.components.attoseconds) / 1e15)
                                    }
                                }
                                return false
                            }
                        } catch {
                            statistics.recordTransportError()
                        }
                    }
                    return (index, statistics, worker)
                }
            }
            var total = LoadStatistics()
            var ended = workers
            for await (index, statistics, worker) in group {
                total.merge(statistics)
                ended[index] = worker
            }
            return (total, ended)
        }
    }
}
