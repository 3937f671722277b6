import Foundation

/// A log's signed statement of its size and root: the body of a C2SP tlog-checkpoint
/// (https://c2sp.org/tlog-checkpoint), signed as a C2SP signed note (`SignedNote`).
///
/// ```
/// <origin>
/// <tree size, decimal>
/// <root hash, base64>
/// Timestamp: <unix seconds>
/// ```
/// The fourth line is an extension line, which the format allows and verifiers that do not
/// know it ignore.
public struct Checkpoint: Equatable, Sendable {
    /// The log's name: a schema-less URL-like string, also the signing key's name.
    public var origin: String
    public var size: Int64
    public var root: [UInt8]
    /// When the checkpoint was signed, in seconds since 1970.
    public var timestamp: Int64

    public init(origin: String, size: Int64, root: [UInt8], timestamp: Int64) {
        self.origin = origin
        self.size = size
        self.root = root
        self.timestamp = timestamp
    }

    /// The note body as signed, newline-terminated.
    public var body: String {
        "\(origin)\n\(size)\n\(Data(root).base64EncodedString())\nTimestamp: \(timestamp)\n"
    }

    /// Reads a body this type wrote.
    public init(body: String) throws(CheckpointError) {
        guard body.hasSuffix("\n") else { throw .malformed("the body must end with a newline") }
        let lines = body.dropLast().split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count >= 3, !lines[0].isEmpty else { throw .malformed("a checkpoint has an origin, a size and a root") }
        guard let size = Int64(lines[1]), size >= 0, String(size) == lines[1] else { throw .malformed("the size is not a decimal number") }
        guard let root = Data(base64Encoded: lines[2]), root.count == MerkleHash.size else { throw .malformed("the root is not a base64 SHA-256 hash") }
        guard let stamp = lines.dropFirst(3).first(where: { $0.hasPrefix("Timestamp: ") }),
            let timestamp = Int64(stamp.dropFirst("Timestamp: ".count))
        else { throw .malformed("no Timestamp extension line") }
        self.init(origin: lines[0], size: size, root: Array(root), timestamp: timestamp)
    }
}

/// A checkpoint or note that could not be read or did not verify.
public enum CheckpointError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformed(String)
    /// No signature line by the expected key.
    case unsigned(key: String)
    case badSignature

    public var description: String {
        switch self {
        case .malformed(let detail): return "malformed checkpoint: \(detail)"
        case .unsigned(let key): return "no signature by \(key)"
        case .badSignature: return "the signature does not verify"
        }
    }
}
