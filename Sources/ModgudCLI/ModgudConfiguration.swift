import EventStorePostgres
import Foundation
import ModgudHTTP
import ModgudService
import SwiftASN1
import X509
import PQ
import SMTP

/// Every setting of `modgud serve`, read from the environment in one place (docs/architecture.md, "House habits"; habit
/// 10; docs/configuration.md lists them).
struct ModgudConfiguration {
    var database: PQConfiguration
    /// 32 bytes, base64 in `MODGUD_MASTER_KEY`: seals the realms' private signing keys.
    var masterKey: [UInt8]?
    var host: String
    var port: Int
    var issuerScheme: String
    /// The bootstrap admin token for /admin/api (`MODGUD_ADMIN_TOKEN`); unset: realm tokens with scope modgud:admin only.
    var adminToken: String?
    /// Proxies whose X-Forwarded-For is believed (`MODGUD_TRUSTED_PROXIES`, comma-separated addresses).
    var trustedProxies: Set<String>
    /// SMTP delivery, or nil for the console sink.
    var smtp: SMTPConfiguration?
    /// `MODGUD_MAIL_TRANSPORT=console` asked for the console sink explicitly.
    var consoleMail: Bool
    var mailDispatcher: MailDispatcher.Settings
    /// SIGTERM: how long `/health/ready` answers 503 before the listener closes (`MODGUD_DRAIN_SECONDS`).
    var drain: Duration
    /// Connection deadlines and cap (`MODGUD_HTTP_*`).
    var limits: ServerLimits
    /// Age after which spent one-shot streams are pruned (`MODGUD_RETENTION_DAYS`).
    var retention: Duration
    /// How long client IPs in event metadata stay readable.
    var addressRetention: Duration
    /// Connections to PostgreSQL at most (`MODGUD_DB_POOL_SIZE`).
    var poolSize: Int
    /// Group commit's commits in flight (`MODGUD_COMMIT_LANES`); nil: every append commits alone.
    var groupCommit: AppendBatcher.Options?
    /// When the audit log signs checkpoints (`MODGUD_AUDIT_CHECKPOINT_SECONDS`, `MODGUD_AUDIT_CHECKPOINT_LEAVES`).
    var auditLog: AuditLogIntegrator.Settings
    /// Shared Signals push delivery (`MODGUD_SSF_PUSH_MAX_ATTEMPTS`, `MODGUD_SSF_PUSH_MAX_BACKOFF_SECONDS`).
    var signalPush: SignalPusher.Settings
    /// The operator console (issue 31; docs/operations/console.md).
    var console = ConsoleListener()
    /// The roots the client attester trusts (issue 47): `MODGUD_ATTESTATION_ROOTS_APPLE` and
    /// `MODGUD_ATTESTATION_ROOTS_GOOGLE` name PEM files that replace Apple's and Google's
    /// published roots (a staging root, or a test authority).
    var attestationRoots = AttestationRoots.published
    /// The cell directory (`MODGUD_DIRECTORY_URL`, issue 71): set, the instance serves every
    /// cell it lists and `MODGUD_DATABASE_URL` is not used; unset, one database as always.
    var directory: PQConfiguration?

    /// Where the operator console is served: its own listener (`MODGUD_CONSOLE_PORT`, on
    /// `MODGUD_CONSOLE_HOST`), and/or the public port when `MODGUD_CONSOLE_ON_PUBLIC_PORT=true`.
    struct ConsoleListener {
        var port: Int?
        var host = "127.0.0.1"
        var onPublicPort = false
        var settings = OperatorConsole.Settings()
        /// The names the console answers to (`MODGUD_CONSOLE_HOSTNAMES`): unset, the realms'
        /// hosts and the console's own; `*`, any; else the list.
        var hostnames: ConsoleConfiguration.HostNames = .realmsAndOwn
    }

    /// The transport `serve` uses: SMTP when configured; the console only when asked for
    /// (it prints codes and links, so it is never a silent production default).
    func mailTransport(allowConsoleByDefault: Bool) throws -> any MailTransport {
        if let smtp { return try SMTPMailTransport(configuration: smtp) }
        guard consoleMail || allowConsoleByDefault else {
            throw CommandError("set MODGUD_SMTP_HOST (and MODGUD_MAIL_FROM), or MODGUD_MAIL_TRANSPORT=console for a test box")
        }
        return ConsoleMailTransport()
    }

    static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ModgudConfiguration {
        guard let port = Int(environment["MODGUD_PORT"] ?? "8080"), (1...65535).contains(port) else {
            throw CommandError("MODGUD_PORT must be a port number")
        }
        var dispatcher = MailDispatcher.Settings()
        if let text = environment["MODGUD_MAIL_MAX_ATTEMPTS"] {
            guard let attempts = Int(text), attempts > 0 else { throw CommandError("MODGUD_MAIL_MAX_ATTEMPTS must be a positive number") }
            dispatcher.maxAttempts = attempts
        }
        let number = EnvironmentNumbers(environment: environment)
        let limits = ServerLimits(
            headerTimeout: .seconds(try number("MODGUD_HTTP_HEADER_TIMEOUT_SECONDS", 10, 1...3600)),
            bodyTimeout: .seconds(try number("MODGUD_HTTP_BODY_TIMEOUT_SECONDS", 30, 1...3600)),
            idleTimeout: .seconds(try number("MODGUD_HTTP_IDLE_TIMEOUT_SECONDS", 60, 1...3600)),
            maxConnections: try number("MODGUD_HTTP_MAX_CONNECTIONS", 4096, 1...1_000_000))
        let proxies = (environment["MODGUD_TRUSTED_PROXIES"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        return ModgudConfiguration(
            database: .fromEnvironment(), masterKey: try masterKey(environment), host: environment["MODGUD_HOST"] ?? "127.0.0.1", port: port,
            issuerScheme: environment["MODGUD_ISSUER_SCHEME"] ?? "https",
            adminToken: environment["MODGUD_ADMIN_TOKEN"].flatMap { $0.count >= 32 ? $0 : nil },
            trustedProxies: Set(proxies.filter { !$0.isEmpty }), smtp: try smtp(environment), consoleMail: environment["MODGUD_MAIL_TRANSPORT"] == "console",
            mailDispatcher: dispatcher, drain: .seconds(try number("MODGUD_DRAIN_SECONDS", 5, 0...600)), limits: limits,
            retention: .seconds(86_400 * (try number("MODGUD_RETENTION_DAYS", 30, 1...3650))),
            addressRetention: .seconds(86_400 * (try number("MODGUD_IP_RETENTION_DAYS", 30, 1...3650))),
            poolSize: try number("MODGUD_DB_POOL_SIZE", 32, 2...1000),
            groupCommit: try number("MODGUD_COMMIT_LANES", 2, 0...64).nonZero.map { AppendBatcher.Options(lanes: $0) },
            auditLog: AuditLogIntegrator.Settings(
                checkpointInterval: .seconds(try number("MODGUD_AUDIT_CHECKPOINT_SECONDS", 60, 1...86_400)),
                checkpointLeaves: Int64(try number("MODGUD_AUDIT_CHECKPOINT_LEAVES", 10_000, 1...10_000_000))),
            signalPush: SignalPusher.Settings(
                maxAttempts: try number("MODGUD_SSF_PUSH_MAX_ATTEMPTS", 20, 1...1000),
                maxBackoff: TimeInterval(try number("MODGUD_SSF_PUSH_MAX_BACKOFF_SECONDS", 300, 1...86_400))),
            console: try consoleListener(environment, number), attestationRoots: try attestationRoots(environment),
            directory: environment["MODGUD_DIRECTORY_URL"].flatMap { $0.isEmpty ? nil : PQConfiguration(connectionString: $0) })
    }

    /// `MODGUD_ATTESTATION_ROOTS_APPLE` / `_GOOGLE`: PEM files of certificates; unset: the platforms' published roots.
    static func attestationRoots(_ environment: [String: String]) throws -> AttestationRoots {
        var roots = AttestationRoots.published
        func certificates(_ name: String) throws -> [Certificate]? {
            guard let path = environment[name], !path.isEmpty else { return nil }
            guard let text = try? String(contentsOfFile: path, encoding: .utf8),
                let parsed = try? PEMDocument.parseMultiple(pemString: text).map({ try Certificate(pemDocument: $0) }), !parsed.isEmpty
            else { throw CommandError("\(name) must name a file of PEM certificates") }
            return parsed
        }
        if let apple = try certificates("MODGUD_ATTESTATION_ROOTS_APPLE") { roots.apple = apple }
        if let google = try certificates("MODGUD_ATTESTATION_ROOTS_GOOGLE") { roots.google = google }
        return roots
    }

    /// `MODGUD_MASTER_KEY`: 32 bytes, base64; nil when unset.
    private static func masterKey(_ environment: [String: String]) throws -> [UInt8]? {
        guard let text = environment["MODGUD_MASTER_KEY"], !text.isEmpty else { return nil }
        guard let bytes = Data(base64Encoded: text), bytes.count == 32 else {
            throw CommandError("MODGUD_MASTER_KEY must be 32 bytes, base64 (e.g. `openssl rand -base64 32`)")
        }
        return Array(bytes)
    }

    /// The SMTP relay, when `MODGUD_SMTP_HOST` is set and the console transport is not asked for.
    private static func smtp(_ environment: [String: String]) throws -> SMTPConfiguration? {
        guard let host = environment["MODGUD_SMTP_HOST"], !host.isEmpty, environment["MODGUD_MAIL_TRANSPORT"] != "console" else { return nil }
        guard let from = environment["MODGUD_MAIL_FROM"], from.contains("@") else {
            throw CommandError("MODGUD_MAIL_FROM must be the sender address when MODGUD_SMTP_HOST is set")
        }
        guard let security = SMTPConfiguration.Security(rawValue: environment["MODGUD_SMTP_SECURITY"] ?? "starttls") else {
            throw CommandError("MODGUD_SMTP_SECURITY must be starttls, tls or none")
        }
        guard let smtpPort = Int(environment["MODGUD_SMTP_PORT"] ?? (security == .tls ? "465" : "587")), (1...65535).contains(smtpPort),
            let timeout = Double(environment["MODGUD_SMTP_TIMEOUT_SECONDS"] ?? "30"), timeout > 0
        else { throw CommandError("MODGUD_SMTP_PORT / MODGUD_SMTP_TIMEOUT_SECONDS are not valid") }
        return SMTPConfiguration(
            host: host, port: smtpPort, security: security, username: environment["MODGUD_SMTP_USERNAME"],
            password: environment["MODGUD_SMTP_PASSWORD"], from: from, heloName: environment["MODGUD_SMTP_HELO"] ?? "localhost",
            timeoutSeconds: timeout, trustRootsFile: environment["MODGUD_SMTP_CA_FILE"], tlsServerName: environment["MODGUD_SMTP_TLS_NAME"])
    }

    /// `MODGUD_CONSOLE_HOSTNAMES` (issue 67): unset or empty, the default check (the realms'
    /// hosts and the console's own); `*`, any host (the opt-out); else the comma-separated names.
    static func consoleHostNames(_ text: String) throws -> ConsoleConfiguration.HostNames {
        let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        if names == ["*"] { return .any }
        if names.isEmpty { return .realmsAndOwn }
        guard !names.contains("*") else { throw CommandError("MODGUD_CONSOLE_HOSTNAMES: * (any host) stands alone, not in a list") }
        // Brackets and ports are not part of a name: `[::1]` is `::1`.
        return .only(Set(names.map { $0.hasPrefix("[") && $0.hasSuffix("]") ? String($0.dropFirst().dropLast()) : $0 }))
    }

    /// The console's listener and sessions (`MODGUD_CONSOLE_*`).
    private static func consoleListener(_ environment: [String: String], _ number: EnvironmentNumbers) throws -> ConsoleListener {
        var console = ConsoleListener(
            port: try number("MODGUD_CONSOLE_PORT", 0, 0...65535).nonZero, host: environment["MODGUD_CONSOLE_HOST"] ?? "127.0.0.1",
            settings: OperatorConsole.Settings(
                realm: environment["MODGUD_CONSOLE_REALM"] ?? "operators",
                idleTimeout: TimeInterval(60 * (try number("MODGUD_CONSOLE_IDLE_MINUTES", 15, 1...720)))))
        console.hostnames = try consoleHostNames(environment["MODGUD_CONSOLE_HOSTNAMES"] ?? "")
        switch environment["MODGUD_CONSOLE_ON_PUBLIC_PORT"] ?? "false" {
        case "true": console.onPublicPort = true
        case "false", "": break
        default: throw CommandError("MODGUD_CONSOLE_ON_PUBLIC_PORT must be true or false")
        }
        return console
    }
}

/// Whole-number settings from the environment: the fallback when unset or empty, else a number
/// in its range or a clear error naming the variable.
private struct EnvironmentNumbers {
    let environment: [String: String]

    func callAsFunction(_ name: String, _ fallback: Int, _ range: ClosedRange<Int>) throws -> Int {
        guard let text = environment[name], !text.isEmpty else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw CommandError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }
}

extension Int {
    /// Nil for zero: a setting whose 0 means "off".
    fileprivate var nonZero: Int? { self == 0 ? nil : self }
}
