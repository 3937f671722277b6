import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// User by id and by normalized email, with status and security stamp (inline: sign-in and
/// refresh read them). A token is live only while its family's stamp equals the user's
/// current one, so a new stamp deactivates every token at once without this projection
/// touching the token tables (each table has one owner, so each projection rebuilds alone).
public struct UserDirectoryProjection: SQLProjection, InlineProjection {
    public let name = "user_directory"
    public let eventTypes: Set<String>? = [
        UserRegistered.eventType, UserProfileChanged.eventType, UserEmailConfirmed.eventType, UserTOTPEnabled.eventType,
        UserTOTPDisabled.eventType, UserSecurityStampRotated.eventType, UserDisabled.eventType, UserEnabled.eventType,
        UserDeleted.eventType,
    ]
    public let tables = ["users"]

    public init() {}

    public func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        let realm = event.stream.realm
        guard let userID = StreamNames.uuid(of: event.stream) else { return [] }
        let users = tables("users")
        func set(_ assignments: String, _ values: any PQEncodable...) -> PQQuery {
            // $1 and $2 identify the row; assignments use $3 onwards.
            PQQuery(
                "UPDATE \(users) SET \(assignments) WHERE realm_id = $1 AND user_id = $2",
                binds: [realm.pqBind, userID.pqBind] + values.map(\.pqBind))
        }
        switch try UserEvent(decoding: event, registry: ModgudEvents.registry) {
        case .registered(let registered):
            return [
                """
                INSERT INTO \(unescaped: users) (realm_id, user_id, email, email_confirmed, username, first_name, last_name, security_stamp)
                VALUES (\(realm), \(registered.userID), \(registered.email.value), \(registered.emailConfirmed), \(registered.username),
                        \(registered.firstName), \(registered.lastName), \(registered.securityStamp))
                """
            ]
        case .profileChanged(let changed):
            return [set("username = $3, first_name = $4, last_name = $5", changed.username, changed.firstName, changed.lastName)]
        case .emailConfirmed:
            return [set("email_confirmed = true")]
        case .totpEnabled:
            return [set("totp_enabled = true")]
        case .totpDisabled:
            return [set("totp_enabled = false")]
        case .totpEnrollmentStarted, .totpStepAccepted:
            return []  // not part of the directory (and not subscribed)
        case .securityStampRotated(let rotated):
            return [set("security_stamp = $3", rotated.securityStamp)]
        case .disabled:
            return [set("status = 'disabled'")]
        case .enabled:
            return [set("status = 'active'")]
        case .deleted:
            return [set("status = 'deleted'")]
        }
    }
}
