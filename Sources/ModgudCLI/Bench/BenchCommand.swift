import ArgumentParser

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks that print numbers (build with -c release).",
        subcommands: [LoadCommand.self, GetCommand.self, EventStoreBenchCommand.self, AuditLogBenchCommand.self, WebAuthnBenchCommand.self, SessionsCommand.self, RefreshChainsCommand.self, FloorServerCommand.self, ScaleCommand.self])
}
