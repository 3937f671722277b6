/// Identifies one stream and what it belongs to.
///
/// Every stream carries its realm so that realms can later move to separate databases
/// (docs/architecture.md, "Event sourcing").
public struct StreamRef: Hashable, Sendable, CustomStringConvertible {
    /// Unique id of the stream, conventionally `type-<uuid>` (e.g. `user-6f1c…`).
    public var id: String
    /// The aggregate type (`user`, `client`, `realm`, …).
    public var type: String
    /// The realm the stream belongs to.
    public var realm: String

    public init(id: String, type: String, realm: String) {
        self.id = id
        self.type = type
        self.realm = realm
    }

    /// A stream whose id is `type-key`.
    public init(type: String, key: String, realm: String) {
        self.init(id: "\(type)-\(key)", type: type, realm: realm)
    }

    public var description: String { id }
}

/// The version a writer expects a stream to be at. There is deliberately no "any":
/// every append states exactly what it decided from.
public enum ExpectedVersion: Hashable, Sendable, CustomStringConvertible {
    /// The stream must not exist yet.
    case noStream
    /// The stream's last event must have exactly this version (1 is the first event).
    case exact(Int64)

    /// 0 for `noStream`, else the version.
    public var value: Int64 {
        switch self {
        case .noStream: return 0
        case .exact(let version): return version
        }
    }

    /// The expected version for a stream whose current version is `version` (0: none).
    public init(current version: Int64) {
        self = version == 0 ? .noStream : .exact(version)
    }

    public var description: String {
        switch self {
        case .noStream: return "no stream"
        case .exact(let version): return "version \(version)"
        }
    }
}
