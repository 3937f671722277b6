import Foundation
import Glibc

/// A `modgud serve` child process for `modgud bench load`: the server runs in its own
/// process, so the load generator's CPU is not the server's and its memory can be read.
final class ServerProcess: @unchecked Sendable {
    let process: Process
    let port: Int

    /// Starts `modgud serve` (or `arguments`) from this executable with `environment` added;
    /// output goes to `logPath`.
    init(port: Int, environment: [String: String], logPath: String, arguments: [String] = ["serve"]) throws {
        self.port = port
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        guard FileManager.default.createFile(atPath: logPath, contents: nil) else { throw CommandError("cannot create \(logPath)") }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = log
        process.standardError = log
        try process.run()
        self.process = process
    }

    var pid: Int32 { process.processIdentifier }

    /// Polls `path` (`/health/ready`) until it answers 200.
    func waitUntilReady(timeout: Duration = .seconds(60), path: String = "/health/ready") async throws {
        let deadline = ContinuousClock.now + timeout
        let connection = LoadHTTPConnection(host: "127.0.0.1", port: port, authority: "localhost")
        while ContinuousClock.now < deadline {
            guard process.isRunning else { throw CommandError("the server exited (status \(process.terminationStatus)); see its log") }
            let status = try? await connection.session { send in try await send(.GET, path, nil, "").status }
            if status == 200 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw CommandError("the server did not become ready in \(timeout)")
    }

    /// SIGTERM, then waits for the exit.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// The server's resident and peak resident memory in KiB (`/proc/PID/status`).
    var memory: (resident: Int, peak: Int)? {
        ProcessCPU.memory(pid: pid)
    }
}

/// CPU time and memory of processes, from `/proc` (Linux).
enum ProcessCPU {
    /// User plus system CPU seconds of a process.
    static func seconds(pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name: state is field 3; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Context switches of every thread of a process, voluntary (a thread waiting: a futex, a
    /// socket) and not: how often work hopped between threads (issue 49).
    static func contextSwitches(pid: Int32) -> Int? {
        guard let threads = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        var total = 0
        for thread in threads {
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(thread)/status", encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") where line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                total += Int(line.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") ?? 0
            }
        }
        return total
    }

    /// The parent pid of a process.
    static func parent(of pid: Int32) -> Int32? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? Int32(fields[1]) : nil
    }

    /// CPU seconds of a process and its direct children (PostgreSQL's postmaster and backends).
    static func treeSeconds(root: Int32) -> Double {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        var total = seconds(pid: root) ?? 0
        for entry in entries {
            guard let pid = Int32(entry), pid != root, parent(of: pid) == root else { continue }
            total += seconds(pid: pid) ?? 0
        }
        return total
    }

    static func memory(pid: Int32) -> (resident: Int, peak: Int)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        func kilobytes(_ field: String) -> Int? {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }) else { return nil }
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        guard let resident = kilobytes("VmRSS"), let peak = kilobytes("VmHWM") else { return nil }
        return (resident, peak)
    }
}
