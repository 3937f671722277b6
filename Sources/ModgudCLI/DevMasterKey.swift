import Crypto
import Foundation

/// The development master key: 32 random bytes generated once into the dev folder (0600).
/// Production takes it from MODGUD_MASTER_KEY instead.
enum DevMasterKey {
    static func load(_ path: String) throws -> [UInt8] {
        if let data = FileManager.default.contents(atPath: path), data.count == 32 { return Array(data) }
        let key = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        guard FileManager.default.createFile(atPath: path, contents: Data(key), attributes: [.posixPermissions: 0o600]) else {
            throw CommandError("cannot write the development master key to \(path)")
        }
        return key
    }
}
