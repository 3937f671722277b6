import Foundation
import PostgresTestSupport
import XCTest

/// Runs the built `modgud` executable against a test database, as an operator would.
struct CLIRunner {
    struct Outcome {
        var status: Int32
        var output: String
        var error: String
    }

    let databaseURL: String
    let masterKey = Data(repeating: 7, count: 32).base64EncodedString()

    /// `.build/<configuration>/modgud`, beside the test bundle.
    static var executable: URL {
        get throws {
            var folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            for _ in 0..<3 {
                let candidate = folder.appendingPathComponent("modgud")
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
                folder = folder.deletingLastPathComponent()
            }
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            let built = root.appendingPathComponent(".build/debug/modgud")
            guard FileManager.default.isExecutableFile(atPath: built.path) else {
                throw ExecutableMissing("the modgud executable was not found beside the tests or in .build/debug")
            }
            return built
        }
    }

    struct ExecutableMissing: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// A started `modgud` process and its pipes.
    struct Launched {
        let process: Process
        let input: Pipe
        let output: Pipe
        let error: Pipe

        /// Closes standard input, waits, and collects the outcome.
        func finish() -> Outcome {
            try? input.fileHandleForWriting.close()
            let out = output.fileHandleForReading.readDataToEndOfFile()
            let err = error.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return Outcome(status: process.terminationStatus, output: String(decoding: out, as: UTF8.self), error: String(decoding: err, as: UTF8.self))
        }
    }

    /// Starts `modgud ARGUMENTS` with MODGUD_DATABASE_URL, MODGUD_MASTER_KEY (unless
    /// `withMasterKey` is false) and `environment`; standard input is a pipe the caller writes.
    func launch(_ arguments: [String], withMasterKey: Bool = true, environment extra: [String: String] = [:]) throws -> Launched {
        let process = Process()
        process.executableURL = try Self.executable
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("MODGUD_") }
        environment["MODGUD_DATABASE_URL"] = databaseURL
        if withMasterKey { environment["MODGUD_MASTER_KEY"] = masterKey }
        environment.merge(extra) { $1 }
        process.environment = environment
        let launched = Launched(process: process, input: Pipe(), output: Pipe(), error: Pipe())
        process.standardInput = launched.input
        process.standardOutput = launched.output
        process.standardError = launched.error
        try process.run()
        return launched
    }

    /// Runs `modgud ARGUMENTS` with MODGUD_DATABASE_URL and (unless `withMasterKey` is false) MODGUD_MASTER_KEY.
    func run(_ arguments: [String], withMasterKey: Bool = true, environment: [String: String] = [:]) throws -> Outcome {
        try launch(arguments, withMasterKey: withMasterKey, environment: environment).finish()
    }

    /// Runs and asserts success; returns standard output.
    @discardableResult
    func ok(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let outcome = try run(arguments)
        XCTAssertEqual(outcome.status, 0, "\(arguments.joined(separator: " ")): \(outcome.error)", file: file, line: line)
        return outcome.output
    }

    /// Runs and asserts failure; returns standard error.
    @discardableResult
    func fails(_ arguments: [String], withMasterKey: Bool = true, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let outcome = try run(arguments, withMasterKey: withMasterKey)
        XCTAssertNotEqual(outcome.status, 0, "\(arguments.joined(separator: " ")) should fail: \(outcome.output)", file: file, line: line)
        return outcome.error
    }
}
