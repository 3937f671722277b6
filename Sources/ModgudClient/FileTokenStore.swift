import Foundation

/// A session in a JSON file readable by its owner only (0600, in a 0700 directory). Each save
/// writes a new file and renames it over the old one, so a crash never leaves half a session.
public struct FileTokenStore: TokenStore {
    public let url: URL

    public init(url: URL) {
        self.url = url
    }

    /// `$XDG_CONFIG_HOME/modgud/session.json`, else `~/.config/modgud/session.json`.
    public static func defaultURL(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let base: URL
        if let config = environment["XDG_CONFIG_HOME"], !config.isEmpty {
            base = URL(fileURLWithPath: config, isDirectory: true)
        } else {
            let home = environment["HOME"].map { URL(fileURLWithPath: $0, isDirectory: true) } ?? FileManager.default.homeDirectoryForCurrentUser
            base = home.appendingPathComponent(".config", isDirectory: true)
        }
        return base.appendingPathComponent("modgud", isDirectory: true).appendingPathComponent("session.json")
    }

    public func load() async throws -> ModgudSession? {
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        return try JSONDecoder.modgud.decode(ModgudSession.self, from: data)
    }

    public func save(_ session: ModgudSession) async throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)")
        // Created 0600 from the start: the tokens are never readable by others, not even briefly.
        guard FileManager.default.createFile(atPath: temporary.path, contents: try JSONEncoder.modgud.encode(session), attributes: [.posixPermissions: 0o600])
        else { throw ModgudError.storage("cannot write \(temporary.path)") }
        guard rename(temporary.path, url.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw ModgudError.storage("cannot replace \(url.path)")
        }
    }

    public func clear() async throws {
        if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
    }
}

extension JSONEncoder {
    static var modgud: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}

extension JSONDecoder {
    static var modgud: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
