import AsyncTestSupport
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A real SMTP server for tests: `Tests/Support/smtp_sink.py` (Python aiosmtpd) in a child
/// process. Each received message is parsed by Python's email package and kept as JSON.
public final class SMTPSink: @unchecked Sendable {
    /// One received mail, as the server decoded it.
    public struct Received: Decodable, Sendable {
        public var mail_from: String
        public var rcpt_tos: [String]
        public var from: String
        public var to: String
        public var subject: String
        public var content_type: String
        public var text: String?
        public var html: String?
        public var tls: Bool
        public var authenticated_as: String?
    }

    public let port: Int
    /// The self-signed certificate the server presents with STARTTLS (trust it in the client).
    public let certificateFile: String?
    public let directory: URL
    private let process: Process
    private let input: Pipe

    /// Starts the server and waits until it accepts connections.
    /// - Parameters:
    ///   - port: the port (nil: a free one).
    ///   - startTLS: offer and require STARTTLS with a fresh self-signed certificate.
    ///   - credentials: `user:password` required before MAIL.
    public init(port: Int? = nil, startTLS: Bool = false, credentials: String? = nil) throws {
        self.port = try port ?? Self.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("smtp-sink-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        SinkFolders.remember(directory)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = ["python3", Self.scriptPath, "--port", String(self.port), "--dir", directory.path]
        if startTLS { arguments.append("--starttls") }
        if let credentials { arguments += ["--auth", credentials] }
        process.arguments = arguments
        input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let line = output.fileHandleForReading.readLine()
        guard let line, let data = line.data(using: .utf8),
            let ready = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else {
            process.terminate()
            throw SinkError("the SMTP sink did not start (is aiosmtpd installed? `pip install aiosmtpd`)")
        }
        certificateFile = ready["ca"] as? String
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops the server (idempotent).
    public func stop() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    /// Every message received so far, in arrival order.
    public func messages() throws -> [Received] {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }.sorted()
        return try names.map { try JSONDecoder().decode(Received.self, from: Data(contentsOf: directory.appendingPathComponent($0))) }
    }

    /// Waits until at least `count` messages arrived (polling the folder; `Eventually`'s hang
    /// guard, not a time the delivery must beat).
    public func waitForMessages(_ count: Int) async throws -> [Received] {
        try await Eventually.value("\(count) messages in the SMTP sink") {
            let received = try messages()
            return received.count >= count ? received : nil
        }
    }

    static var scriptPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Tests/Support/smtp_sink.py").path
    }

    /// A port nobody listens on right now (bind to 0, read it, close).
    public static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw SinkError("socket() failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw SinkError("bind() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Every sink's folder, removed when the test process exits: XCTest keeps a test case's
/// properties (and so its sinks) alive until then, so `deinit` alone left one folder per sink
/// in the temporary directory after every run.
enum SinkFolders {
    private static let folders = Mutex<[URL]>([])
    private static let registered = Atomic<Bool>(false)

    static func remember(_ folder: URL) {
        folders.withLock { $0.append(folder) }
        if registered.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            atexit { SinkFolders.removeAll() }
        }
    }

    static func removeAll() {
        for folder in folders.withLock({ $0 }) { try? FileManager.default.removeItem(at: folder) }
    }
}

/// The sink could not do what a test asked.
public struct SinkError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

extension FileHandle {
    /// Reads up to a newline (blocking), or nil at end of file.
    public func readLine() -> String? {
        var bytes: [UInt8] = []
        while true {
            let chunk = readData(ofLength: 1)
            guard let byte = chunk.first else { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }
}
