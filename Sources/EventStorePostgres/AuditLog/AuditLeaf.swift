import PQ
import TransparencyLog

/// One event as a leaf of its realm's audit log (docs/operations/audit-log.md, "Leaves").
///
/// The leaf's data is the event row exactly as stored, each field as a 4-byte big-endian
/// length and its UTF-8 bytes, in this order: the tag `modgud-event/1`, realm, position,
/// stream id, stream type, stream version, type, revision, payload and metadata as
/// PostgreSQL prints their `jsonb`, and the recording time in microseconds since 1970.
/// Numbers are decimal text. Personal data in a payload is sealed, so the leaf covers the
/// ciphertext, and crypto-shredding changes nothing the leaf covers.
public struct AuditLeaf: Sendable, Equatable {
    public var realm: String
    public var position: Int64
    public var streamID: String
    public var streamType: String
    public var streamVersion: Int64
    public var type: String
    public var revision: Int64
    public var payload: String
    public var metadata: String
    public var recordedAtMicroseconds: Int64

    static let tag = "modgud-event/1"

    /// The columns `init(row:at:)` reads, for a query over `events` aliased `e`.
    static let columns = """
        e.realm, e.position, e.stream_id, e.stream_type, e.stream_version, e.type, e.revision::int8, e.payload::text,
        e.metadata::text, (extract(epoch FROM e.recorded_at) * 1000000)::int8
        """
    static let columnCount = 10

    init(row: PQRow, at offset: Int = 0) throws {
        realm = try row.decode(String.self, at: offset)
        position = try row.decode(Int64.self, at: offset + 1)
        streamID = try row.decode(String.self, at: offset + 2)
        streamType = try row.decode(String.self, at: offset + 3)
        streamVersion = try row.decode(Int64.self, at: offset + 4)
        type = try row.decode(String.self, at: offset + 5)
        revision = try row.decode(Int64.self, at: offset + 6)
        payload = try row.decode(String.self, at: offset + 7)
        metadata = try row.decode(String.self, at: offset + 8)
        recordedAtMicroseconds = try row.decode(Int64.self, at: offset + 9)
    }

    /// The bytes the leaf hash covers.
    public var data: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64 + streamID.utf8.count + payload.utf8.count + metadata.utf8.count)
        for field in [
            Self.tag, realm, String(position), streamID, streamType, String(streamVersion), type, String(revision), payload, metadata,
            String(recordedAtMicroseconds),
        ] {
            let utf8 = field.utf8
            let count = UInt32(utf8.count)
            bytes += [UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
            bytes += utf8
        }
        return bytes
    }

    /// `MerkleHash.leaf(data)`.
    public var hash: [UInt8] { MerkleHash.leaf(data) }
}
