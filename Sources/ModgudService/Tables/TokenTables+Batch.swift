import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

extension TokenTables {
    /// Many token events folded into a fixed handful of set-based statements (issue 70): a
    /// rebuild or a long batch applies thousands of events with one statement per table and
    /// kind of change, where one statement per row cost the token rebuild 17 minutes at 10M
    /// events. Each statement binds one array per column and `unnest`s them, so its text is
    /// the same whatever the batch's size (one prepared statement, never a new one per size).
    ///
    /// The statements run in a fixed order: families, then refresh and access tokens, then
    /// revocations. That order gives the same rows as applying the events one by one as long
    /// as no event of a family follows its revocation within the fold; `accepts` reports that
    /// case, and the caller starts a new fold there.
    struct Batch {
        private var families = Columns(count: 9)
        private var startedAccess = Columns(count: 10)
        private var refreshedAccess = Columns(count: 7)
        private var refresh = Columns(count: 4)
        private var revoked = Columns(count: 2)
        private var revokedFamilies: Set<UUID> = []
        /// The `attestation` column of each access token (JSON; kept apart from `Columns`,
        /// whose values are short texts).
        private var startedAttestations: [String?] = []
        private var refreshedAttestations: [String?] = []

        /// Whether an event of this family keeps the fold's order exact.
        func accepts(family: UUID) -> Bool { !revokedFamilies.contains(family) }

        mutating func add(_ started: TokenFamilyStarted, family: UUID, realm: String) {
            let device = started.deviceSession
            families.append([
                family.text, realm, started.clientID, started.userID?.text, started.scopes.arrayLiteral, started.audiences.arrayLiteral,
                started.securityStamp, device?.sessionID.text, started.startsDeviceSession ? device?.secretHash : nil,
            ])
            let token = started.accessToken
            startedAccess.append([
                token.hash, realm, family.text, started.clientID, started.userID?.text, started.scopes.arrayLiteral,
                started.audiences.arrayLiteral, token.format.rawValue, token.expiresAt.text, token.dpopKey,
            ])
            startedAttestations.append(attestationText(token))
            if let hash = started.refreshTokenHash, let expiry = started.refreshExpiresAt {
                refresh.append([hash, realm, family.text, expiry.text])
            }
        }

        mutating func add(_ refreshed: TokenFamilyRefreshed, family: UUID, realm: String) {
            refresh.append([refreshed.refreshTokenHash, realm, family.text, refreshed.refreshExpiresAt.text])
            let token = refreshed.accessToken
            refreshedAccess.append([
                token.hash, family.text, token.scopes?.arrayLiteral, token.audiences?.arrayLiteral, token.format.rawValue,
                token.expiresAt.text, token.dpopKey,
            ])
            refreshedAttestations.append(attestationText(token))
        }

        mutating func add(_ revocation: TokenFamilyRevoked, family: UUID) {
            revoked.append([family.text, revocation.reason.rawValue])
            revokedFamilies.insert(family)
        }

        /// The fold's statements, in the order that keeps it equal to one-by-one application.
        func statements(tables: ProjectionTables) -> [PQQuery] {
            var statements: [PQQuery] = []
            if !families.isEmpty {
                let c = families.arrays
                statements.append(
                    """
                    INSERT INTO \(unescaped: tables("token_families"))
                        (family_id, realm_id, client_id, user_id, scopes, audiences, security_stamp, device_session, device_secret_hash)
                    SELECT f::uuid, r, c, u::uuid, s::text[], a::text[], st, ds::uuid, dh
                    FROM unnest(\(c[0]), \(c[1]), \(c[2]), \(c[3]), \(c[4]), \(c[5]), \(c[6]), \(c[7]), \(c[8])) AS x(f, r, c, u, s, a, st, ds, dh)
                    """)
            }
            if !refresh.isEmpty {
                let c = refresh.arrays
                statements.append(
                    """
                    INSERT INTO \(unescaped: tables("refresh_tokens")) (token_hash, realm_id, family_id, expires_at)
                    SELECT h, r, f::uuid, e::timestamptz FROM unnest(\(c[0]), \(c[1]), \(c[2]), \(c[3])) AS x(h, r, f, e)
                    """)
            }
            if !startedAccess.isEmpty {
                let c = startedAccess.arrays
                statements.append(
                    """
                    INSERT INTO \(unescaped: tables("access_tokens"))
                        (token_hash, realm_id, family_id, client_id, user_id, scopes, audiences, format, expires_at, jkt, attestation)
                    SELECT h, r, f::uuid, c, u::uuid, s::text[], a::text[], fm, e::timestamptz, j, at
                    FROM unnest(\(c[0]), \(c[1]), \(c[2]), \(c[3]), \(c[4]), \(c[5]), \(c[6]), \(c[7]), \(c[8]), \(c[9]), \(startedAttestations))
                        AS x(h, r, f, c, u, s, a, fm, e, j, at)
                    """)
            }
            if !refreshedAccess.isEmpty {
                let c = refreshedAccess.arrays
                statements.append(
                    """
                    INSERT INTO \(unescaped: tables("access_tokens"))
                        (token_hash, realm_id, family_id, client_id, user_id, scopes, audiences, format, expires_at, jkt, attestation)
                    SELECT x.h, t.realm_id, t.family_id, t.client_id, t.user_id, coalesce(x.s::text[], t.scopes), coalesce(x.a::text[], t.audiences),
                           x.fm, x.e::timestamptz, x.j, x.at
                    FROM unnest(\(c[0]), \(c[1]), \(c[2]), \(c[3]), \(c[4]), \(c[5]), \(c[6]), \(refreshedAttestations)) AS x(h, f, s, a, fm, e, j, at)
                    JOIN \(unescaped: tables("token_families")) t ON t.family_id = x.f::uuid
                    """)
            }
            if !revoked.isEmpty {
                let c = revoked.arrays
                statements.append(
                    """
                    UPDATE \(unescaped: tables("token_families")) t SET revoked_reason = x.reason
                    FROM unnest(\(c[0]), \(c[1])) AS x(f, reason) WHERE t.family_id = x.f::uuid
                    """)
            }
            return statements
        }
    }

    /// One text array per column, nulls kept.
    private struct Columns {
        private(set) var columns: [[String?]]

        init(count: Int) { columns = Array(repeating: [], count: count) }

        var isEmpty: Bool { columns[0].isEmpty }

        mutating func append(_ row: [String?]) {
            precondition(row.count == columns.count, "a row has one value per column")
            for index in row.indices { columns[index].append(row[index]) }
        }

        var arrays: [[String?]] { columns }
    }
}

extension UUID {
    /// The lowercase text form PostgreSQL prints.
    fileprivate var text: String { uuidString.lowercased() }
}

extension Date {
    /// The text form bound for a `timestamptz`.
    fileprivate var text: String { pqBind.text ?? "" }
}

extension Array where Element == String {
    /// The text form of a one-dimensional `text[]`, for a column bound inside a text array.
    fileprivate var arrayLiteral: String { pqBind.text ?? "{}" }
}
