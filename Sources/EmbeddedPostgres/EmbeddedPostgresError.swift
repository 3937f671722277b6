/// Why the embedded cluster could not start or stop.
public enum EmbeddedPostgresError: Error, CustomStringConvertible, Equatable {
    /// No initdb/pg_ctl were found.
    case binariesMissing(searched: [String])
    /// A helper program failed.
    case processFailed(String, String)
    /// The `postgres` OS user is needed when running as root and does not exist.
    case noPostgresUser

    public var description: String {
        switch self {
        case .binariesMissing(let searched):
            return """
                PostgreSQL server binaries (initdb, pg_ctl) were not found (looked in: \(searched.joined(separator: ", "))).
                Install them: on Debian/Ubuntu `sudo apt-get install -y postgresql`; on macOS `brew install postgresql@16`.
                Or set MODGUD_PG_BINDIR to the folder holding initdb, or MODGUD_DATABASE_URL to use an existing server.
                """
        case .processFailed(let program, let output):
            return "\(program) failed: \(output)"
        case .noPostgresUser:
            return "running as root, PostgreSQL needs the 'postgres' OS user (created by the postgresql package) to own its data folder"
        }
    }
}
