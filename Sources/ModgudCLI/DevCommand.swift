import ArgumentParser
import EmbeddedPostgres
import EventStorePostgres
import Glibc
import Logging
import ModgudHTTP
import ModgudService
import PQ

/// `modgud dev`: zero-setup development mode on a private PostgreSQL cluster.
struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: "Run on a private PostgreSQL cluster in a project-local folder (no setup needed).")

    @Option(help: "Folder for the development cluster and keys.") var dataDir = ".modgud/dev"
    @Option(help: "PostgreSQL port (default: a free one, or the running cluster's).") var postgresPort: Int?
    @Option(help: "HTTP port.") var port = 8080

    func run() async throws {
        let folder = absolute(dataDir)
        let cluster = try EmbeddedPostgres(.init(dataDirectory: folder + "/postgres", port: postgresPort))
        let pool = PQPool(
            configuration: PQConfiguration(connectionString: cluster.url),
            options: .init(maxConnections: 16, waitObserver: MetricsExposition.poolWaitObserver()))
        let report = try await Migrator.product(pool: pool).migrate()
        let masterKey = try DevMasterKey.load(folder + "/master.key")
        let environment = try ModgudConfiguration.fromEnvironment()
        let core = try ModgudCore(pool: pool, masterKey: masterKey, attestationRoots: environment.attestationRoots)
        try await DevSeed.seed(admin: core.administration, console: core.console(settings: .init()), port: port)
        print(Self.banner(port: port, folder: folder, cluster: cluster, migrations: report, environment: environment))
        fflush(nil)
        do {
            try await Server.run(
                core: core,
                settings: .init(
                    host: "127.0.0.1", port: port, issuerScheme: "http", drain: .zero, limits: environment.limits,
                    retention: environment.retention, addressRetention: environment.addressRetention, consoleSecureCookie: false,
                    consoleOnPublicPort: true),
                configuration: environment, mail: try environment.mailTransport(allowConsoleByDefault: true))
        } catch {
            await pool.close()
            try cluster.stop()
            throw error
        }
        await pool.close()
        try cluster.stop()
    }

    /// What `modgud dev` prints at start: where everything is, and both email flows to try.
    static func banner(port: Int, folder: String, cluster: EmbeddedPostgres, migrations report: Migrator.Report, environment: ModgudConfiguration)
        -> String
    {
        let base = "http://localhost:\(port)"
        return
            """
            Modgud dev is running.
              http         \(base)  (realm "\(DevSeed.realmID)", public client "\(DevSeed.clientID)")
              console      \(base)/console  (operator \(DevSeed.operatorEmail); the sign-in code arrives like any mail)
              mail         \(environment.smtp.map { "SMTP \($0.host):\($0.port)" } ?? "printed here (console sink)")
              database     \(cluster.url)
              data folder  \(folder)\(cluster.relocated ? "\n  cluster      \(cluster.dataDirectory)  (the postgres user cannot reach \(folder), so the cluster lives here)" : "")
              migrations   \(report.applied.count) applied now, \(report.alreadyApplied.count) already applied

            Sign in with an email code (in another terminal; \(environment.smtp == nil ? "the mail with the code prints here" : "the code goes out over SMTP")):
              curl -s \(base)/api/account/native/otp/request -H 'Content-Type: application/json' \\
                   -d '{"Email":"ada@example.com"}'
              curl -s \(base)/connect/token -d grant_type=urn:cocoar:otp -d client_id=\(DevSeed.clientID) \\
                   -d username=ada@example.com -d otp_code=<the code> -d 'scope=openid email offline_access'

            Or let the CLI do it (it prompts for the code and keeps the session in ~/.config/modgud):
              modgud login --issuer \(base) --client-id \(DevSeed.clientID) --email ada@example.com
              curl -s \(base)/connect/userinfo -H "Authorization: Bearer $(modgud token)"
              modgud logout

            Sign in with a magic link (the account exists once the code above was redeemed):
              curl -s \(base)/api/account/magic-link/request -H 'Content-Type: application/json' \\
                   -d '{"Email":"ada@example.com"}'
              curl -s \(base)/connect/token -d grant_type=urn:cocoar:magic -d client_id=\(DevSeed.clientID) \\
                   -d user_id=<userId from the link> -d magic_token=<token from the link> -d 'scope=openid offline_access'

            Passkeys (the demo client's RP-ID is localhost; a platform authenticator does the signing):
              curl -s \(base)/connect/passkey/enroll/begin -X POST -H 'Authorization: Bearer <access_token>'
              curl -s \(base)/connect/passkey/begin -d client_id=\(DevSeed.clientID)
              curl -s \(base)/connect/passkey -H 'Authorization: Bearer <access_token>'

            Then:
              curl -s \(base)/connect/userinfo -H 'Authorization: Bearer <access_token>'
              curl -s \(base)/connect/token -d grant_type=refresh_token -d client_id=\(DevSeed.clientID) -d refresh_token=<refresh_token>
              curl -s \(base)/.well-known/openid-configuration
              export MODGUD_DATABASE_URL=\(cluster.url); modgud events replay

            Ctrl-C stops the server, the projection daemon, the mail dispatcher and the cluster.
            """
    }

    private func absolute(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
        guard getcwd(&buffer, buffer.count) != nil else { return path }
        let cwd = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return cwd + "/" + path
    }
}
