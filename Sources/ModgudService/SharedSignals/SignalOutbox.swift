import Foundation
import PQ

/// The transmitter's outbox as operators see it (`modgud ssf`): streams with their waiting
/// and dead SETs, the dead SETs with their last error, and putting them back in line.
public struct SignalOutbox: Sendable {
    /// One stream with its counts.
    public struct Stream: Sendable, Equatable {
        public var realm: String
        public var clientID: String
        public var streamID: String
        public var method: String
        public var status: String
        public var pending: Int
        public var dead: Int
    }

    /// One dead SET: no subject, no contents.
    public struct DeadSET: Sendable, Equatable {
        public var streamID: String
        public var realm: String
        public var clientID: String
        public var position: Int64
        public var jti: String
        public var event: String
        public var attempts: Int
        public var lastError: String?
        public var enqueuedAt: Date
    }

    let pool: PQPool

    public init(pool: PQPool) { self.pool = pool }

    public func streams() async throws -> [Stream] {
        try await pool.query(SignalStreamsTable.overview).rows.map { row in
            Stream(
                realm: try row.decode(String.self, at: 0), clientID: try row.decode(String.self, at: 1), streamID: try row.decode(String.self, at: 2),
                method: try row.decode(String.self, at: 3), status: try row.decode(String.self, at: 4), pending: try row.decode(Int.self, at: 5),
                dead: try row.decode(Int.self, at: 6))
        }
    }

    public func dead(limit: Int = 100) async throws -> [DeadSET] {
        try await pool.query(SignalOutboxTable.dead(limit: limit)).rows.map { row in
            DeadSET(
                streamID: try row.decode(String.self, at: 0), realm: try row.decode(String.self, at: 1), clientID: try row.decode(String.self, at: 2),
                position: try row.decode(Int64.self, at: 3), jti: try row.decode(String.self, at: 4), event: try row.decode(String.self, at: 5),
                attempts: try row.decode(Int.self, at: 6), lastError: try row.decode(String?.self, at: 7), enqueuedAt: try row.decode(Date.self, at: 8))
        }
    }

    /// Dead SETs pending again (of one stream, or all); how many. They keep their `jti`, and
    /// go out before anything newer still waiting on their stream (late: the stream moved on).
    @discardableResult
    public func retryDead(streamID: String? = nil) async throws -> Int {
        try await pool.query(SignalOutboxTable.retryDead(streamID: streamID)).affectedRows
    }
}
