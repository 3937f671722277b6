import Foundation
import MailTestSupport

/// A Python script of `Tests/Support/` run as a child process: what it printed (stdout and
/// stderr), trimmed. Test tools that play a client we did not write (Authlib, a verifier
/// written from the specifications) run this way.
enum PythonScript {
    static func run(_ name: String, input: String) throws -> String {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Support/\(name)")
        return try python([script.path], input: input)
    }

    /// A long-running script of `Tests/Support/` (a stand-in server): started with
    /// `arguments`, its first line of standard output read as its ready signal (JSON).
    /// - Returns: the process, the pipe of its standard input (closing it asks the script to
    ///   stop) and the ready line decoded.
    static func spawn(_ name: String, _ arguments: [String]) throws -> (process: Process, input: Pipe, ready: [String: Any]) {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Support/\(name)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path] + arguments
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let line = output.fileHandleForReading.readLine() ?? ""
        guard let ready = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            process.terminate()
            throw ReceiverError("\(name) did not start: \(line)")
        }
        return (process, input, ready)
    }

    /// A few lines of Python given as text (`python3 -c`).
    static func inline(_ source: String, input: String) throws -> String {
        try python(["-c", source], input: input)
    }

    private static func python(_ arguments: [String], input: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        let stdin = Pipe()
        let output = Pipe()
        process.standardInput = stdin
        process.standardOutput = output
        process.standardError = output
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
