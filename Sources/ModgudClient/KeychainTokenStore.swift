#if canImport(Security) && canImport(Darwin)
import Foundation
import Security

/// A session in the Keychain (Apple platforms): one generic-password item per issuer and
/// client, readable after the device's first unlock and never synced or backed up to
/// another device. CI does not build this file (Linux has no Keychain).
public struct KeychainTokenStore: TokenStore {
    public let service: String
    public let account: String

    /// - Parameters:
    ///   - service: the item's service (default `modgud`).
    ///   - account: the item's account: one per issuer and client.
    public init(service: String = "modgud", issuer: String, clientID: String) {
        self.service = service
        self.account = "\(issuer) \(clientID)"
    }

    private var query: [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account]
    }

    public func load() async throws -> ModgudSession? {
        var search = query
        search[kSecReturnData as String] = true
        search[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(search as CFDictionary, &result)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = result as? Data else { throw ModgudError.storage("Keychain read failed (\(status))") }
        return try JSONDecoder.modgud.decode(ModgudSession.self, from: data)
    }

    public func save(_ session: ModgudSession) async throws {
        let data = try JSONEncoder.modgud.encode(session)
        let update: [String: Any] = [kSecValueData as String: data]
        var status = SecItemUpdate(query as CFDictionary, update as CFDictionary)
        if status == errSecItemNotFound {
            var item = query
            item[kSecValueData as String] = data
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            status = SecItemAdd(item as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw ModgudError.storage("Keychain write failed (\(status))") }
    }

    public func clear() async throws {
        let status = SecItemDelete(query as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else { throw ModgudError.storage("Keychain delete failed (\(status))") }
    }
}
#endif
