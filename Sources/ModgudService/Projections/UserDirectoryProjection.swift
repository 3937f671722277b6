import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain
import PQ

/// User by id and by the blind index of the address, with status and security stamp (inline:
/// sign-in and refresh read them). Personal columns hold the events' sealed text, copied
/// unopened, and the index comes from beside the user's key (`subject_keys.email_index`), so
/// the projection stays pure, a rebuild needs no key, and an erased user's row gets no index. `user.erased` leaves a
/// tombstone with every personal column null (and the address free for a new sign-up). A token is live only while its family's stamp equals the user's
/// current one, so a new stamp deactivates every token at once without this projection
/// touching the token tables (each table has one owner, so each projection rebuilds alone).
/// Its SQL lives in `UsersTable`.
public struct UserDirectoryProjection: SQLProjection, InlineProjection {
    public let name = "user_directory"
    public let eventTypes: Set<String>? = [
        UserRegistered.eventType, UserProfileChanged.eventType, UserEmailConfirmed.eventType, UserTOTPEnabled.eventType,
        UserTOTPDisabled.eventType, UserSecurityStampRotated.eventType, UserDisabled.eventType, UserEnabled.eventType,
        UserDeleted.eventType, UserErased.eventType, UserRolesChanged.eventType,
    ]
    public let tables = ["users"]

    public init() {}

    public func statements(for event: EventEnvelope, tables: ProjectionTables) throws -> [PQQuery] {
        let realm = event.stream.realm
        guard let userID = StreamNames.uuid(of: event.stream) else { return [] }
        let users = tables("users")
        func set(_ assignments: String, _ values: any PQEncodable...) -> PQQuery {
            UsersTable.set(table: users, realm: realm, userID: userID, assignments, values)
        }
        switch try UserEvent(decoding: event, registry: ModgudEvents.registry) {
        case .registered(let registered):
            return [UsersTable.insert(table: users, realm: realm, registered)]
        case .profileChanged(let changed):
            return [
                set("username = $3, first_name = $4, last_name = $5", changed.username?.stored, changed.firstName?.stored, changed.lastName?.stored)
            ]
        case .emailConfirmed:
            return [set("email_confirmed = true")]
        case .totpEnabled:
            return [set("totp_enabled = true")]
        case .totpDisabled:
            return [set("totp_enabled = false")]
        case .totpEnrollmentStarted, .totpStepAccepted, .recoveryCodesGenerated, .recoveryCodeUsed, .recoveryCodesRevoked, .identityLinked,
            .identityUnlinked:
            return []  // not part of the directory (and not subscribed)
        case .securityStampRotated(let rotated):
            return [set("security_stamp = $3", rotated.securityStamp)]
        case .disabled:
            return [set("status = 'disabled'")]
        case .enabled:
            return [set("status = 'active'")]
        case .deleted:
            return [set("status = 'deleted'")]
        case .rolesChanged(let changed):
            return [set("roles = $3", changed.roles)]
        case .erased:
            return [set("status = 'erased', email = NULL, email_key = NULL, username = NULL, first_name = NULL, last_name = NULL")]
        }
    }

    /// The keys a lookup of `email` matches: its blind index, and its legacy form.
    public static func emailKeys(_ email: EmailAddress, index: String) -> [String] {
        [index, "plain:" + email.value]
    }
}
