import Foundation

/// A user's enrolled WebAuthn credential (docs/spec.md section 4). The stream key is the
/// management id apps see; the WebAuthn credential id is looked up through the
/// `passkeys` read model by its hash.
public enum Passkey: Aggregate {
    public static let streamType = "passkey"

    public struct State: Sendable, Equatable {
        public var enrolled: PasskeyEnrolled?
        public var signCount: UInt32 = 0
        public var backedUp = false
        public var lastUsedAt: Date?
        public var deleted = false
        /// The name after the last rename (nil: the name it was enrolled with).
        public var renamedTo: PersonalText?

        public var isActive: Bool { enrolled != nil && !deleted }
        /// The name shown now (sealed under the owner's key).
        public var displayName: PersonalText? { renamedTo ?? enrolled?.displayName }
    }

    public enum Command: Sendable {
        case enroll(PasskeyEnrolled)
        /// A verified assertion: the new sign count must exceed the stored one when either is
        /// non-zero (WebAuthn L3 section 7.2 step 25), or it is recorded as a possible clone.
        case recordUse(signCount: UInt32, backedUp: Bool, at: Date)
        /// The verifier saw the counter go backwards: record it, refuse the sign-in.
        case reportClone(stored: UInt32, received: UInt32)
        /// Deleted by its owner or an administrator (`by` is `user:<id>` or `admin:…`).
        case delete(by: String)
        /// A new display name: `name` is checked (trimmed, 1 to 64 characters, no control
        /// characters; the `current` name again writes nothing) and `sealed` is recorded, the
        /// same name sealed under the owner's key. The caller opens `current` and seals: the
        /// domain holds no keys.
        case rename(String, sealed: PersonalText, current: String?, by: String)
        /// An assertion of this credential was refused, for the reason given (a deleted
        /// passkey's too: its owner's app still offers it).
        case reportFailedAssertion(reason: String)
    }

    public static let initialState = State()

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [PasskeyEvent] {
        if case .enroll(let enrolled) = command {
            guard state.enrolled == nil else { throw DomainError("Passkey.Exists", "The passkey exists.") }
            guard !enrolled.credentialID.isEmpty, !enrolled.publicKey.isEmpty, !enrolled.rpID.isEmpty else {
                throw DomainError("Passkey.Invalid", "A passkey needs a credential id, a public key and an RP-ID.")
            }
            return [.enrolled(enrolled)]
        }
        if case .reportFailedAssertion(let reason) = command {
            guard state.enrolled != nil else { throw DomainError.notFound("Passkey.NotFound", "No such passkey.") }
            return [.assertionFailed(PasskeyAssertionFailed(reason: String(reason.prefix(64))))]
        }
        guard state.isActive else { throw DomainError.notFound("Passkey.NotFound", "No such passkey.") }
        switch command {
        case .enroll, .reportFailedAssertion:
            return []
        case .recordUse(let count, let backedUp, let at):
            if count != 0 || state.signCount != 0, count <= state.signCount {
                return [.cloneSuspected(PasskeyCloneSuspected(storedSignCount: state.signCount, receivedSignCount: count))]
            }
            return [.used(PasskeyUsed(signCount: count, backedUp: backedUp, usedAt: at))]
        case .reportClone(let stored, let received):
            return [.cloneSuspected(PasskeyCloneSuspected(storedSignCount: stored, receivedSignCount: received))]
        case .delete(let by):
            return [.deleted(PasskeyDeleted(by: by))]
        case .rename(let raw, let sealed, let current, let by):
            guard let name = Self.validName(raw) else {
                throw DomainError("Passkey.InvalidName", "A passkey name is 1 to 64 characters, without control characters.")
            }
            guard name != current else { return [] }
            return [.renamed(PasskeyRenamed(displayName: sealed, by: by))]
        }
    }

    /// A name as it is kept: trimmed, 1 to 64 characters, no control characters; nil otherwise.
    public static func validName(_ raw: String) -> String? {
        let name = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...64).contains(name.count), !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return nil }
        return name
    }

    public static func evolve(_ state: State, _ event: PasskeyEvent) -> State {
        var next = state
        switch event {
        case .enrolled(let enrolled):
            next.enrolled = enrolled
            next.signCount = enrolled.signCount
            next.backedUp = enrolled.backedUp
        case .used(let used):
            next.signCount = used.signCount
            next.backedUp = used.backedUp
            next.lastUsedAt = used.usedAt
        case .cloneSuspected, .assertionFailed:
            break  // recorded for the audit; the stored count stays
        case .renamed(let renamed):
            next.renamedTo = renamed.displayName
        case .deleted:
            next.deleted = true
        }
        return next
    }
}
