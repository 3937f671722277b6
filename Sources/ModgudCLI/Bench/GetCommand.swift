import ArgumentParser
import Foundation

/// `modgud bench get URL`: one GET, repeated on kept-alive connections, against any server:
/// how static documents compare with a peer's, with the same native generator, in the same
/// window (issue 27). It prints the rate, p50 and p99 and, given the server's pid, its CPU
/// per request.
struct GetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Drive one GET at a URL on kept-alive connections; print rate, latencies and the server's CPU per request.")

    @Argument(help: "http://HOST:PORT/PATH") var url: String
    @Option(help: "The Host header (default: the URL's host).") var host: String?
    @Option(help: "Concurrent keep-alive connections.") var connections = 64
    @Option(help: "Seconds measured.") var seconds = 10.0
    @Option(help: "Seconds of unmeasured load first.") var warmup = 1.0
    @Option(help: "The server's process id, for its CPU per request.") var pid: Int32?
    @Option(help: "A label for the printed line.") var label: String?

    func run() async throws {
        guard let parsed = URL(string: url), parsed.scheme == "http", let address = parsed.host, let port = parsed.port else {
            throw ValidationError("the URL must be http://HOST:PORT/PATH")
        }
        let path = parsed.path.isEmpty ? "/" : parsed.path + (parsed.query.map { "?" + $0 } ?? "")
        let connection = LoadHTTPConnection(host: address, port: port, authority: host ?? address)
        _ = await drive(connection, path: path, until: .now + .milliseconds(Int64(warmup * 1000)))
        let cpuBefore = pid.flatMap(ProcessCPU.seconds(pid:))
        let started = ContinuousClock.now
        let statistics = await drive(connection, path: path, until: started + .milliseconds(Int64(seconds * 1000)))
        let elapsed = ContinuousClock.now - started
        let measured = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let cpu = pid.flatMap(ProcessCPU.seconds(pid:)).flatMap { after in cpuBefore.map { after - $0 } }
        let ok = Double(max(statistics.succeeded, 1))
        let line = [
            label ?? path, String(format: "%.0f ok/s", Double(statistics.succeeded) / measured),
            String(format: "p50 %.2f ms", statistics.percentile(0.5)), String(format: "p99 %.2f ms", statistics.percentile(0.99)),
            "errors \(statistics.failed)", cpu.map { String(format: "server %.3f ms/op", $0 * 1000 / ok) } ?? "",
        ].joined(separator: "  ")
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
        if statistics.succeeded == 0 { throw CommandError("no request succeeded") }
    }

    private func drive(_ connection: LoadHTTPConnection, path: String, until deadline: ContinuousClock.Instant) async -> LoadStatistics {
        await withTaskGroup(of: LoadStatistics.self) { group in
            for _ in 0..<connections {
                group.addTask {
                    var statistics = LoadStatistics()
                    while ContinuousClock.now < deadline {
                        do {
                            try await connection.session { send in
                                while ContinuousClock.now < deadline {
                                    let sent = ContinuousClock.now
                                    let reply = try await send(.GET, path, nil, "")
                                    let took = ContinuousClock.now - sent
                                    statistics.record(
                                        status: reply.status, expected: 200,
                                        milliseconds: Double(took.components.seconds) * 1000 + Double(took.components.attoseconds) / 1e15)
                                }
                            }
                        } catch {
                            statistics.recordTransportError()
                        }
                    }
                    return statistics
                }
            }
            var total = LoadStatistics()
            for await statistics in group { total.merge(statistics) }
            return total
        }
    }
}
