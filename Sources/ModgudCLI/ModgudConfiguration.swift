import Foundation
import PQ

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
        return ModgudConfiguration(
            database: .fromEnvironment(), masterKey: masterKey, host: environment["MODGUD_HOST"] ?? "127.0.0.1", port: port,
            issuerScheme: environment["MODGUD_ISSUER_SCHEME"] ?? "https",
            adminToken: environment["MODGUD_ADMIN_TOKEN"].flatMap { $0.count >= 32 ? $0 : nil })
    }
}
