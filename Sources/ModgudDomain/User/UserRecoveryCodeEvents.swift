import EventSourcing
import Foundation

/// user.recovery_codes_generated (issue 46): a new set of recovery codes replaced any earlier
/// one. The set's id and size only: the codes were shown once and live as slow hashes in the
/// `recovery_codes` table, never in an event.
public struct UserRecoveryCodesGenerated: DomainEvent, Equatable {
    public static let eventType = "user.recovery_codes_generated"
    public var setID: UUID
    public var count: Int
    /// The set this one replaced (its codes stop working with this event).
    public var replaced: UUID?

    public init(setID: UUID, count: Int, replaced: UUID? = nil) {
        self.setID = setID
        self.count = count
        self.replaced = replaced
    }
}

/// user.recovery_code_used: one code of the set signed the person in to a recovery session.
/// Which code is not recorded (the table marks it); how many are left is.
public struct UserRecoveryCodeUsed: DomainEvent, Equatable {
    public static let eventType = "user.recovery_code_used"
    public var setID: UUID
    public var remaining: Int

    public init(setID: UUID, remaining: Int) {
        self.setID = setID
        self.remaining = remaining
    }
}

/// user.recovery_codes_revoked: the set stops working (an operator, or the person).
public struct UserRecoveryCodesRevoked: DomainEvent, Equatable {
    public static let eventType = "user.recovery_codes_revoked"
    public var setID: UUID

    public init(setID: UUID) {
        self.setID = setID
    }
}
