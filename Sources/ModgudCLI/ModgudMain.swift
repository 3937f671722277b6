import Foundation

/// The process's entry point: sets the malloc arenas (`MallocArenas`) and chooses which
/// threads run its tasks (`GlobalExecutor`) before anything starts one, then runs the command.
@main
enum ModgudMain {
    static func main() async {
        let environment = ProcessInfo.processInfo.environment
        MallocArenas.apply(environment: environment, cores: ProcessInfo.processInfo.activeProcessorCount)
        GlobalExecutor.install(environment: environment)
        await Modgud.main()
    }
}
