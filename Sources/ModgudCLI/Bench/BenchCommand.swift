import ArgumentParser

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Benchmarks that print numbers (build with -c release).",
        subcommands: [LoadCommand.self, EventStoreBenchCommand.self, WebAuthnBenchCommand.self, SessionsCommand.self, RefreshChainsCommand.self])
}
