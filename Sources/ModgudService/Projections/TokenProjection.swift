import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// Token families, access tokens and refresh tokens by hash (inline: every request
/// authenticated by a token reads them the moment after issuance).
public struct TokenProjection: SQLProjection, InlineProjection {
    public let name = "tokens"
    public let eventTypes: Set<String>? = [TokenFamilyStarted.eventType, TokenFamilyRefreshed.eventType, TokenFamilyRevoked.eventType]
    public let tables = ["token_families", "access_tokens", "refresh_tokens"]

    public init() {}

    public func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        let realm = event.stream.realm
        guard let familyID = StreamNames.uuid(of: event.stream) else { return [] }
        switch try TokenFamilyEvent(decoding: event, registry: ModgudEvents.registry) {
        case .started(let started):
            var statements: [PQQuery] = [
                """
                INSERT INTO \(unescaped: tables("token_families")) (family_id, realm_id, client_id, user_id, scopes, audiences, security_stamp)
                VALUES (\(familyID), \(realm), \(started.clientID), \(started.userID), \(started.scopes), \(started.audiences),
                        \(started.securityStamp))
                """,
                insertAccess(started.accessToken, family: familyID, started: started, realm: realm, tables: tables),
            ]
            if let hash = started.refreshTokenHash, let expiry = started.refreshExpiresAt {
                statements.append(insertRefresh(hash, expiresAt: expiry, family: familyID, realm: realm, tables: tables))
            }
            return statements
        case .refreshed(let refreshed):
            // The family row names the client, user, scopes and audiences of every token.
            let retire: [PQQuery] = refreshed.retiredRefreshHash.map {
                ["UPDATE \(unescaped: tables("refresh_tokens")) SET spent = true WHERE token_hash = \($0)"]
            } ?? []
            return retire + [
                "UPDATE \(unescaped: tables("refresh_tokens")) SET spent = true WHERE token_hash = \(refreshed.spentRefreshHash)",
                insertRefresh(refreshed.refreshTokenHash, expiresAt: refreshed.refreshExpiresAt, family: familyID, realm: realm, tables: tables),
                """
                INSERT INTO \(unescaped: tables("access_tokens"))
                    (token_hash, realm_id, family_id, client_id, user_id, scopes, audiences, format, expires_at)
                SELECT \(refreshed.accessToken.hash), realm_id, family_id, client_id, user_id, scopes, audiences,
                       \(refreshed.accessToken.format.rawValue), \(refreshed.accessToken.expiresAt)
                FROM \(unescaped: tables("token_families")) WHERE family_id = \(familyID)
                """,
            ]
        case .revoked(let revoked):
            return [
                "UPDATE \(unescaped: tables("token_families")) SET revoked_reason = \(revoked.reason.rawValue) WHERE family_id = \(familyID)",
                "UPDATE \(unescaped: tables("access_tokens")) SET revoked = true WHERE family_id = \(familyID)",
                "UPDATE \(unescaped: tables("refresh_tokens")) SET spent = true WHERE family_id = \(familyID)",
            ]
        }
    }

    private func insertAccess(_ token: IssuedAccessToken, family: UUID, started: TokenFamilyStarted, realm: String, tables: ProjectionTables)
        -> PQQuery
    {
        """
        INSERT INTO \(unescaped: tables("access_tokens")) (token_hash, realm_id, family_id, client_id, user_id, scopes, audiences, format, expires_at)
        VALUES (\(token.hash), \(realm), \(family), \(started.clientID), \(started.userID), \(started.scopes), \(started.audiences),
                \(token.format.rawValue), \(token.expiresAt))
        """
    }

    private func insertRefresh(_ hash: String, expiresAt: Date, family: UUID, realm: String, tables: ProjectionTables) -> PQQuery {
        """
        INSERT INTO \(unescaped: tables("refresh_tokens")) (token_hash, realm_id, family_id, expires_at)
        VALUES (\(hash), \(realm), \(family), \(expiresAt))
        """
    }

    /// Every inline projection of the identity core.
    public static var identity: [any SQLProjection] {
        [RealmDirectoryProjection(), ClientDirectoryProjection(), UserDirectoryProjection(), TokenProjection(), PasskeyDirectoryProjection()]
    }
}
