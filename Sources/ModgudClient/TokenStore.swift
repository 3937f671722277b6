import Foundation

/// Where a `ModgudClient` keeps its session between launches. `FileTokenStore` (a 0600 file,
/// for Linux, CLIs and CI) and `KeychainTokenStore` (Apple platforms) ship with the library;
/// `MemoryTokenStore` keeps nothing past the process.
public protocol TokenStore: Sendable {
    func load() async throws -> ModgudSession?
    func save(_ session: ModgudSession) async throws
    func clear() async throws
}

/// A session in memory only.
public actor MemoryTokenStore: TokenStore {
    private var session: ModgudSession?

    public init(_ session: ModgudSession? = nil) {
        self.session = session
    }

    public func load() -> ModgudSession? { session }
    public func save(_ session: ModgudSession) { self.session = session }
    public func clear() { session = nil }
}
