import Foundation
import ModgudService
import PQ
import SMTP

/// Every setting of `modgud serve`, read from the environment in one place (STYLE.md habit
/// 10; the README's configuration table lists them).
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
        var masterKey: [UInt8]? = nil
        if let text = environment["MODGUD_MASTER_KEY"], !text.isEmpty {
            guard let bytes = Data(base64Encoded: text), bytes.count == 32 else {
                throw CommandError("MODGUD_MASTER_KEY must be 32 bytes, base64 (e.g. `openssl rand -base64 32`)")
            }
            masterKey = Array(bytes)
        }
        guard let port = Int(environment["MODGUD_PORT"] ?? "8080"), (1...65535).contains(port) else {
            throw CommandError("MODGUD_PORT must be a port number")
        }
        var smtp: SMTPConfiguration? = nil
        if let host = environment["MODGUD_SMTP_HOST"], !host.isEmpty, environment["MODGUD_MAIL_TRANSPORT"] != "console" {
            guard let from = environment["MODGUD_MAIL_FROM"], from.contains("@") else {
                throw CommandError("MODGUD_MAIL_FROM must be the sender address when MODGUD_SMTP_HOST is set")
            }
            guard let security = SMTPConfiguration.Security(rawValue: environment["MODGUD_SMTP_SECURITY"] ?? "starttls") else {
                throw CommandError("MODGUD_SMTP_SECURITY must be starttls, tls or none")
            }
            guard let smtpPort = Int(environment["MODGUD_SMTP_PORT"] ?? (security == .tls ? "465" : "587")), (1...65535).contains(smtpPort),
                let timeout = Double(environment["MODGUD_SMTP_TIMEOUT_SECONDS"] ?? "30"), timeout > 0
            else { throw CommandError("MODGUD_SMTP_PORT / MODGUD_SMTP_TIMEOUT_SECONDS are not valid") }
            smtp = SMTPConfiguration(
                host: host, port: smtpPort, security: security, username: environment["MODGUD_SMTP_USERNAME"],
                password: environment["MODGUD_SMTP_PASSWORD"], from: from, heloName: environment["MODGUD_SMTP_HELO"] ?? "localhost",
                timeoutSeconds: timeout, trustRootsFile: environment["MODGUD_SMTP_CA_FILE"], tlsServerName: environment["MODGUD_SMTP_TLS_NAME"])
        }
        var dispatcher = MailDispatcher.Settings()
        if let text = environment["MODGUD_MAIL_MAX_ATTEMPTS"] {
            guard let attempts = Int(text), attempts > 0 else { throw CommandError("MODGUD_MAIL_MAX_ATTEMPTS must be a positive number") }
            dispatcher.maxAttempts = attempts
        }
        let proxies = (environment["MODGUD_TRUSTED_PROXIES"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        return ModgudConfiguration(
            database: .fromEnvironment(), masterKey: masterKey, host: environment["MODGUD_HOST"] ?? "127.0.0.1", port: port,
            issuerScheme: environment["MODGUD_ISSUER_SCHEME"] ?? "https",
            adminToken: environment["MODGUD_ADMIN_TOKEN"].flatMap { $0.count >= 32 ? $0 : nil },
            trustedProxies: Set(proxies.filter { !$0.isEmpty }), smtp: smtp, consoleMail: environment["MODGUD_MAIL_TRANSPORT"] == "console",
            mailDispatcher: dispatcher)
    }
}
