import AsyncTestSupport
import Foundation
import MailTestSupport
@testable import ModgudService

/// `Tests/Support/ssf_receiver.py` in a child process: a Shared Signals receiver written from
/// the specifications, which creates its stream at start and keeps every SET it accepted.
final class SSFReceiver: @unchecked Sendable {
    struct Received: @unchecked Sendable {
        var event: String
        var jti: String
        var claims: [String: Any]
        var json: String
    }

    let directory: URL
    let streamID: String
    private let process: Process
    private let input: Pipe

    /// Starts the receiver against a live server and waits until its stream exists.
    init(issuer: String, clientID: String, secret: String, mode: String, format: String? = nil) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ssf-receiver-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var arguments = [
            "--issuer", issuer, "--client-id", clientID, "--secret=\(secret)", "--out", directory.path, "--mode", mode,
            "--port", String(try SMTPSink.freePort()),
        ]
        if let format { arguments += ["--format", format] }
        let started = try PythonScript.spawn("ssf_receiver.py", arguments)
        (process, input) = (started.process, started.input)
        guard let streamID = started.ready["stream_id"] as? String else {
            process.terminate()
            throw ReceiverError("the SSF receiver did not start: \(started.ready)")
        }
        self.streamID = streamID
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Every SET accepted so far, in arrival order.
    func received() throws -> [Received] {
        try files("set-").map { url in
            let data = try Data(contentsOf: url)
            let object = try XCTUnwrapDictionary(JSONSerialization.jsonObject(with: data))
            return Received(
                event: object["event"] as? String ?? "", jti: object["jti"] as? String ?? "", claims: object["claims"] as? [String: Any] ?? [:],
                json: String(decoding: data, as: UTF8.self))
        }
    }

    /// The receiver's refusals (a SET that failed its checks), as text.
    func refusals() throws -> [String] {
        try files("error-").map { String(decoding: try Data(contentsOf: $0), as: UTF8.self) }
    }

    /// Waits until a received SET matches, and returns it (`Eventually`'s hang guard).
    func waitFor(_ what: String, _ matches: @escaping @Sendable (Received) -> Bool) async throws -> Received {
        try await Eventually.value(what) { try self.received().first(where: matches) }
    }

    /// While down, the push endpoint answers 503 and the poller stops polling.
    func setDown(_ down: Bool) throws {
        let flag = directory.appendingPathComponent("down")
        if down { try Data().write(to: flag) } else { try? FileManager.default.removeItem(at: flag) }
    }

    private func files(_ prefix: String) throws -> [URL] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(prefix) && $0.hasSuffix(".json") }.sorted()
            .map { directory.appendingPathComponent($0) }
    }

    private func XCTUnwrapDictionary(_ value: Any) throws -> [String: Any] {
        guard let dictionary = value as? [String: Any] else { throw ReceiverError("not a JSON object") }
        return dictionary
    }
}

struct ReceiverError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The transmitter's background work for a test: the log follower, push delivery and the
/// NOTIFY relay, as `modgud serve` runs them. Cancel the task to stop.
enum SignalBackground {
    static func start(_ core: ModgudCore, settings: SignalPusher.Settings = SignalPusher.Settings(initialBackoff: 0.2, maxBackoff: 1)) -> Task<Void, Never> {
        let transmitter = core.makeSignalTransmitter()
        let pusher = core.makeSignalPusher(settings: settings)
        return Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await transmitter.run(pollInterval: .milliseconds(200)) }
                group.addTask { await pusher.run() }
                group.addTask { await core.makeSignalRelay()() }
            }
        }
    }
}
