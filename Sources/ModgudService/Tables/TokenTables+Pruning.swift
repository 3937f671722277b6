import Foundation
import PQ

extension TokenTables {
    /// How long a token's row outlives the last moment it could be used: a week in which
    /// `/revoke` still finds an expired access token's family, and a refresh token of an ended
    /// family still gets the family's refusal rather than an unknown token's.
    public static let retention: TimeInterval = 7 * 24 * 3600

    /// Rows one prune statement deletes at most, so no delete holds its locks for long.
    static let pruneChunk = 5000

    /// What one prune deleted.
    public struct PruneReport: Sendable, Equatable {
        public var accessTokens = 0
        public var refreshTokens = 0
    }

    /// Deletes the rows no request can use any more (issue 70: nothing pruned them, and at 10M
    /// events the two tables held 9.7M rows each). A rebuild of the token projection brings
    /// them back from the log, and the next prune takes them again.
    /// - An access token expired before `now - retention`.
    /// - A refresh token expired before `now - retention` whose family can no longer be
    ///   refreshed: revoked, or with no refresh token left unexpired at that cutoff. A live
    ///   family keeps all of its spent tokens, so a replayed one is still recognised as reuse
    ///   and revokes the family (RFC 9700 section 4.14.2).
    /// At most `maxChunks` statements per table per call; the next call carries on.
    public func prune(now: Date, maxChunks: Int = 20) async throws -> PruneReport {
        let cutoff = now.addingTimeInterval(-Self.retention)
        var report = PruneReport()
        for _ in 0..<maxChunks {
            let deleted = try await pool.query(Self.pruneAccessTokens(before: cutoff, limit: Self.pruneChunk)).affectedRows
            report.accessTokens += deleted
            if deleted < Self.pruneChunk { break }
        }
        for _ in 0..<maxChunks {
            let deleted = try await pool.query(Self.pruneRefreshTokens(before: cutoff, limit: Self.pruneChunk)).affectedRows
            report.refreshTokens += deleted
            if deleted < Self.pruneChunk { break }
        }
        return report
    }

    /// Found through the BRIN index on `expires_at` (schema/0031): tokens are written in
    /// nearly the order they expire.
    static func pruneAccessTokens(before cutoff: Date, limit: Int) -> PQQuery {
        """
        DELETE FROM access_tokens WHERE token_hash IN (
            SELECT token_hash FROM access_tokens WHERE expires_at < \(cutoff) LIMIT \(limit))
        """
    }

    static func pruneRefreshTokens(before cutoff: Date, limit: Int) -> PQQuery {
        """
        DELETE FROM refresh_tokens WHERE token_hash IN (
            SELECT c.token_hash FROM refresh_tokens c JOIN token_families f ON f.family_id = c.family_id
            WHERE c.expires_at < \(cutoff)
              AND (f.revoked_reason IS NOT NULL
                   OR NOT EXISTS (SELECT 1 FROM refresh_tokens l WHERE l.family_id = c.family_id AND l.expires_at >= \(cutoff)))
            LIMIT \(limit))
        """
    }
}
