#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A private PostgreSQL cluster in a folder: `initdb` once, start on a free loopback port,
/// create the database, stop cleanly.
///
/// Used by `modgud dev` (a persistent folder) and by the test suite (a throwaway folder).
/// When running as root, the server runs as the `postgres` OS user, which owns the folder
/// (initdb and postgres refuse to run as root).
public final class EmbeddedPostgres: Sendable {
    /// Where and how to run the cluster.
    public struct Options: Sendable {
        /// The data folder (created if missing).
        public var dataDirectory: String
        /// The database to create and connect to.
        public var database: String
        /// The port; nil picks a free one.
        public var port: Int?
        /// Durable commits (fsync). Tests turn it off for speed; `modgud dev` and benchmarks keep it.
        public var durable: Bool
        /// Extra `-c name=value` server settings.
        public var settings: [String: String]

        public init(dataDirectory: String, database: String = "modgud", port: Int? = nil, durable: Bool = true, settings: [String: String] = [:]) {
            self.dataDirectory = dataDirectory
            self.database = database
            self.port = port
            self.durable = durable
            self.settings = settings
        }
    }

    public let options: Options
    /// The folder holding initdb, pg_ctl and postgres.
    public let binDirectory: String
    /// The port the server listens on (127.0.0.1 only).
    public let port: Int
    /// Where the cluster's files are: `options.dataDirectory`, or, when running as root and
    /// the `postgres` user cannot reach that folder (a parent is private, as a 0700 home
    /// folder is), a folder of its own under `/var/tmp/modgud-postgres` (see `relocated`).
    public let dataDirectory: String
    /// True when `dataDirectory` differs from the requested folder, which `postgres` could not reach.
    public var relocated: Bool { dataDirectory != options.dataDirectory }
    private let runAsPostgresUser: Bool
    private let serverOptions: String

    /// `postgresql://postgres@127.0.0.1:<port>/<database>`.
    public var url: String { "postgresql://postgres@127.0.0.1:\(port)/\(options.database)" }

    /// URL of another database in the same cluster.
    public func url(database: String) -> String { "postgresql://postgres@127.0.0.1:\(port)/\(database)" }

    /// Where clusters go whose requested folder the `postgres` user cannot reach.
    public static let fallbackRoot = "/var/tmp/modgud-postgres"

    /// Initializes the folder if needed and starts the server (reusing one already running there).
    public init(_ options: Options) throws {
        self.options = options
        binDirectory = try Self.locateBinaries()
        runAsPostgresUser = geteuid() == 0
        if runAsPostgresUser, getpwnam("postgres") == nil { throw EmbeddedPostgresError.noPostgresUser }
        try Self.makeDirectories(options.dataDirectory)
        if runAsPostgresUser && !Self.postgresCanReach(options.dataDirectory) {
            // initdb runs as `postgres`, which must be able to traverse every parent folder.
            // Rather than fail (or loosen the user's folder permissions), keep the cluster in
            // a folder of its own, named after the requested one so that it persists.
            try Self.makeDirectories(Self.fallbackRoot)
            chmod(Self.fallbackRoot, 0o711)
            dataDirectory = Self.fallbackRoot + "/" + Self.folderName(for: options.dataDirectory)
            try Self.makeDirectories(dataDirectory)
        } else {
            dataDirectory = options.dataDirectory
        }
        if !Self.exists(dataDirectory + "/PG_VERSION") {
            try Self.prepareFolder(dataDirectory, chown: runAsPostgresUser)
            try Self.run(
                binDirectory + "/initdb",
                ["-D", dataDirectory, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-instructions"],
                asPostgres: runAsPostgresUser)
        }
        let running = Self.runningPort(dataDirectory, bin: binDirectory, asPostgres: runAsPostgresUser)
        port = try running ?? options.port ?? Self.freePort()
        var settings = [
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": "''",
            "max_connections": "200",
        ]
        if !options.durable {
            settings["fsync"] = "off"
            settings["synchronous_commit"] = "off"
            settings["full_page_writes"] = "off"
        }
        settings.merge(options.settings) { _, new in new }
        serverOptions = (["-p \(port)"] + settings.sorted { $0.key < $1.key }.map { "-c \($0.key)=\($0.value)" }).joined(separator: " ")
        if running == nil { try start() }
        try createDatabase(options.database)
    }

    /// Starts the server on its port (after `stop`, for restart tests and tools).
    public func start() throws {
        try Self.run(
            binDirectory + "/pg_ctl",
            ["-D", dataDirectory, "-l", dataDirectory + "/server.log", "-w", "-t", "60", "-o", serverOptions, "start"],
            asPostgres: runAsPostgresUser)
    }

    /// Creates a database in the cluster if it does not exist.
    /// - Parameter template: copy this database instead of `template1`.
    public func createDatabase(_ name: String, template: String? = nil) throws {
        var arguments = ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres"]
        if let template { arguments += ["-T", template] }
        let outcome = try ProcessRunner.run(binDirectory + "/createdb", arguments + [name])
        if !outcome.succeeded && !outcome.output.contains("already exists") {
            throw EmbeddedPostgresError.processFailed("createdb", outcome.output)
        }
    }

    /// Stops the server (fast shutdown: open sessions are ended).
    public func stop() throws {
        try Self.run(binDirectory + "/pg_ctl", ["-D", dataDirectory, "-m", "fast", "-w", "stop"], asPostgres: runAsPostgresUser)
    }

    /// Ends the server as a crash would (immediate shutdown: no checkpoint), so that the next
    /// start runs crash recovery, which empties UNLOGGED tables.
    public func crash() throws {
        try Self.run(binDirectory + "/pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"], asPostgres: runAsPostgresUser)
    }

    /// Stops the server and deletes the data folder.
    public func destroy() throws {
        try? stop()
        _ = try ProcessRunner.run("rm", ["-rf", dataDirectory])
    }

    // MARK: Helpers

    /// The database at `url` as `pg_dump` writes it (plain SQL, data included): what a backup
    /// holds, for tests that must not find something in it.
    public static func dump(url: String) throws -> String {
        let outcome = try ProcessRunner.run(try locateBinaries() + "/pg_dump", ["--no-owner", "--dbname=" + url])
        guard outcome.succeeded else { throw EmbeddedPostgresError.processFailed("pg_dump", outcome.output) }
        return outcome.output
    }

    /// MODGUD_PG_BINDIR, then the newest /usr/lib/postgresql/N/bin, then Homebrew, then PATH.
    static func locateBinaries() throws -> String {
        var searched: [String] = []
        if let configured = getenv("MODGUD_PG_BINDIR").map({ String(cString: $0) }), !configured.isEmpty {
            if exists(configured + "/initdb") { return configured }
            searched.append(configured)
        }
        var candidates: [String] = []
        if let directory = opendir("/usr/lib/postgresql") {
            defer { closedir(directory) }
            while let entry = readdir(directory) {
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
                }
                if let version = Int(name) { candidates.append("\(version)") }
            }
        }
        for version in candidates.sorted(by: { Int($0)! > Int($1)! }) {
            let folder = "/usr/lib/postgresql/\(version)/bin"
            if exists(folder + "/initdb") { return folder }
            searched.append(folder)
        }
        for folder in ["/opt/homebrew/bin", "/usr/local/bin", "/usr/bin"] {
            if exists(folder + "/initdb") && exists(folder + "/pg_ctl") { return folder }
            searched.append(folder)
        }
        throw EmbeddedPostgresError.binariesMissing(searched: searched)
    }

    /// Whether the `postgres` OS user can search `folder` (and so every parent of it).
    static func postgresCanReach(_ folder: String) -> Bool {
        guard let outcome = try? ProcessRunner.run("runuser", ["-u", "postgres", "--", "test", "-x", folder]) else { return false }
        return outcome.succeeded
    }

    /// A stable folder name for a relocated cluster: the requested folder's last parts and a hash of its path.
    static func folderName(for path: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a, 64 bits
        for byte in path.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0100_0000_01b3
        }
        let readable = path.split(separator: "/").suffix(2).joined(separator: "-")
            .map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" }
        return String(readable) + "-" + String(hash, radix: 16)
    }

    static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0
    }

    private static func makeDirectories(_ path: String) throws {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if !exists(current) && mkdir(current, 0o755) != 0 && errno != EEXIST {
                throw EmbeddedPostgresError.processFailed("mkdir", "cannot create \(current): errno \(errno)")
            }
        }
    }

    private static func prepareFolder(_ path: String, chown owner: Bool) throws {
        chmod(path, 0o700)
        if owner, let user = getpwnam("postgres") {
            guard chown(path, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
                throw EmbeddedPostgresError.processFailed("chown", "cannot give \(path) to the postgres user: errno \(errno)")
            }
        }
    }

    /// The port of a server already running on this folder, if any.
    private static func runningPort(_ folder: String, bin: String, asPostgres: Bool) -> Int? {
        guard exists(folder + "/postmaster.pid"),
            let status = try? run(bin + "/pg_ctl", ["-D", folder, "status"], asPostgres: asPostgres, allowFailure: true),
            status.succeeded,
            let contents = try? ProcessRunner.readFile(folder + "/postmaster.pid")
        else { return nil }
        // postmaster.pid line 4 is the port.
        let lines = contents.split(separator: "\n", omittingEmptySubsequences: false)
        return lines.count > 3 ? Int(lines[3].trimmingCharacters()) : nil
    }

    /// A loopback port that was free a moment ago.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw EmbeddedPostgresError.processFailed("socket", "errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { throw EmbeddedPostgresError.processFailed("bind", "errno \(errno)") }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw EmbeddedPostgresError.processFailed("getsockname", "errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @discardableResult
    private static func run(_ program: String, _ arguments: [String], asPostgres: Bool, allowFailure: Bool = false) throws
        -> ProcessRunner.Outcome
    {
        let outcome =
            asPostgres
            ? try ProcessRunner.run("runuser", ["-u", "postgres", "--", program] + arguments)
            : try ProcessRunner.run(program, arguments)
        if !outcome.succeeded && !allowFailure {
            throw EmbeddedPostgresError.processFailed(program, outcome.output)
        }
        return outcome
    }
}

extension Substring {
    fileprivate func trimmingCharacters() -> String {
        String(self.drop { $0 == " " }.reversed().drop { $0 == " " || $0 == "\r" }.reversed())
    }
}
