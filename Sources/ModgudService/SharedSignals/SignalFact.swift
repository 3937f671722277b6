import EventSourcing
import Foundation
import JWTKit
import ModgudDomain

/// What one log event means to receivers: the SET to fan out, before it is addressed to any
/// stream. Pure: `SignalCatalog` derives it, `SignalOutboxTable.fanOut` writes it per stream.
struct SignalFact: Equatable, Sendable {
    /// Whose event it is.
    enum Owner: Equatable, Sendable {
        /// The user is named by the event's stream or payload.
        case user(UUID)
        /// The user is the `userID` of the first event of another stream (a token family's
        /// start, a passkey's enrollment), looked up in the log by the fan-out statement.
        case firstEventOf(streamID: String)
    }

    var event: SignalEvent
    var owner: Owner
    /// The token family, for session-revoked of one session.
    var session: UUID?
    /// The event's own fields (nothing personal), in the SET as they are.
    var detail: [String: JWTHeaderField]
    /// Merge the passkey's `aaguid` and `backupEligible` from its enrollment (the first event
    /// of the owner stream) into the detail, for credential-change.
    var passkeyFacts = false
}

/// The SET-worthy events of the log (docs/guides/shared-signals.md, "What each event sends").
enum SignalCatalog {
    /// The event types the transmitter reads; everything else passes it by.
    static let eventTypes: [String] = [
        TokenFamilyRevoked.eventType, UserSecurityStampRotated.eventType, UserTOTPEnabled.eventType, UserTOTPDisabled.eventType,
        UserProfileChanged.eventType, UserEmailConfirmed.eventType, UserDisabled.eventType, UserEnabled.eventType, UserDeleted.eventType,
        UserErased.eventType, PasskeyEnrolled.eventType, PasskeyRenamed.eventType, PasskeyDeleted.eventType,
        UserRecoveryCodesGenerated.eventType, UserRecoveryCodeUsed.eventType, UserRecoveryCodesRevoked.eventType, UserIdentityLinked.eventType,
        UserIdentityUnlinked.eventType,
    ] + SignalStreamEvent.types

    /// The fact an event produces, if any.
    static func fact(for event: EventEnvelope) throws -> SignalFact? {
        let initiator = initiatingEntity(event.metadata.actor)
        switch event.stream.type {
        case TokenFamily.streamType:
            guard case .revoked(let revoked) = try TokenFamilyEvent(decoding: event, registry: ModgudEvents.registry),
                let familyID = StreamNames.uuid(of: event.stream)
            else { return nil }
            let (entity, reason) = sessionReason(revoked.reason)
            return SignalFact(
                event: .sessionRevoked, owner: .firstEventOf(streamID: event.stream.id), session: familyID,
                detail: ["initiating_entity": .string(entity), "reason_admin": .object(["en": .string(reason)])])
        case User.streamType:
            guard let userID = StreamNames.uuid(of: event.stream) else { return nil }
            return try userFact(try UserEvent(decoding: event, registry: ModgudEvents.registry), userID: userID, initiator: initiator)
        case Passkey.streamType:
            return try passkeyFact(try PasskeyEvent(decoding: event, registry: ModgudEvents.registry), stream: event.stream.id, initiator: initiator)
        default:
            return nil
        }
    }

    private static func userFact(_ event: UserEvent, userID: UUID, initiator: String) throws -> SignalFact? {
        func fact(_ kind: SignalEvent, _ detail: [String: JWTHeaderField]) -> SignalFact {
            SignalFact(event: kind, owner: .user(userID), detail: detail)
        }
        switch event {
        case .securityStampRotated(let rotated):
            // Every session of the user at once: the SET names the user and no session.
            let (entity, reason) = stampReason(rotated.reason, initiator: initiator)
            return fact(.sessionRevoked, ["initiating_entity": .string(entity), "reason_admin": .object(["en": .string(reason)])])
        case .totpEnabled:
            return fact(.credentialChange, credential("app", "create", initiator, "An authenticator app was set up."))
        case .totpDisabled:
            return fact(.credentialChange, credential("app", "delete", initiator, "The authenticator app was turned off."))
        case .profileChanged(let changed):
            // The names themselves are read at delivery, for receivers that may see them.
            var names: [JWTHeaderField] = []
            if changed.username != nil { names.append(.string("preferred_username")) }
            if changed.firstName != nil { names.append(.string("given_name")) }
            if changed.lastName != nil { names.append(.string("family_name")) }
            return fact(.tokenClaimsChange, ["changed": .array(names), "initiating_entity": .string(initiator)])
        case .emailConfirmed:
            return fact(.tokenClaimsChange, ["claims": .object(["email_verified": .bool(true)]), "initiating_entity": .string(initiator)])
        case .disabled:
            return fact(.accountDisabled, [:])
        case .enabled:
            return fact(.accountEnabled, [:])
        case .deleted, .erased:
            return fact(.accountPurged, [:])
        case .recoveryCodesGenerated(let generated):
            // CAEP 1.0 section 3.2: `credential_type` may be a type the transmitter and receiver
            // agree on; Modgud's is `recovery-code` (docs/shared-signals.md).
            return fact(
                .credentialChange,
                credential(
                    "recovery-code", generated.replaced == nil ? "create" : "update", initiator,
                    "\(generated.count) recovery codes were generated\(generated.replaced == nil ? "" : ", replacing the earlier set")."))
        case .recoveryCodeUsed(let used):
            return fact(.credentialChange, credential("recovery-code", "update", initiator, "A recovery code was used; \(used.remaining) left."))
        case .recoveryCodesRevoked:
            return fact(.credentialChange, credential("recovery-code", "revoke", initiator, "The recovery codes were revoked."))
        case .identityLinked(let linked):
            // A new way in: CAEP credential-change, type `federated` (Modgud's; docs/shared-signals.md).
            return fact(.credentialChange, credential("federated", "create", initiator, "A \(linked.provider) account was linked."))
        case .identityUnlinked(let unlinked):
            return fact(.credentialChange, credential("federated", "revoke", initiator, "The \(unlinked.provider) account was unlinked (\(unlinked.reason))."))
        case .registered, .totpEnrollmentStarted, .totpStepAccepted, .rolesChanged:
            return nil
        }
    }

    private static func passkeyFact(_ event: PasskeyEvent, stream: String, initiator: String) throws -> SignalFact? {
        switch event {
        case .enrolled(let enrolled):
            var detail = credential("", "create", initiator, "A passkey was enrolled.")
            detail["aaguid"] = .string(enrolled.aaguid)
            detail["backupEligible"] = .bool(enrolled.backupEligible)
            return SignalFact(event: .credentialChange, owner: .user(enrolled.userID), detail: detail)
        case .renamed:
            return SignalFact(
                event: .credentialChange, owner: .firstEventOf(streamID: stream), detail: credential("", "update", initiator, "A passkey was renamed."),
                passkeyFacts: true)
        case .deleted(let deleted):
            let why = deleted.by == "erasure" ? "A passkey was deleted when its owner was erased." : "A passkey was deleted."
            return SignalFact(
                event: .credentialChange, owner: .firstEventOf(streamID: stream), detail: credential("", "delete", deleted.by == "erasure" ? "admin" : initiator, why),
                passkeyFacts: true)
        case .used, .cloneSuspected, .assertionFailed:
            return nil
        }
    }

    /// CAEP credential-change fields; a passkey's `credential_type` is settled at delivery
    /// from `backupEligible` (a synced passkey is a platform one).
    private static func credential(_ type: String, _ change: String, _ initiator: String, _ reason: String) -> [String: JWTHeaderField] {
        var detail: [String: JWTHeaderField] = [
            "change_type": .string(change), "initiating_entity": .string(initiator), "reason_admin": .object(["en": .string(reason)]),
        ]
        if !type.isEmpty { detail["credential_type"] = .string(type) }
        return detail
    }

    /// CAEP section 2 `initiating_entity` from the event's actor (`user:…`, `admin:…`).
    static func initiatingEntity(_ actor: String?) -> String {
        guard let actor else { return "system" }
        if actor.hasPrefix("user:") { return "user" }
        if actor.hasPrefix("admin") || actor.hasPrefix("operator:") { return "admin" }  // the CLI, the admin API, the console
        return "system"
    }

    private static func sessionReason(_ reason: RevocationReason) -> (String, String) {
        switch reason {
        case .reuse: return ("policy", "A spent refresh token was presented again; the session was revoked.")
        case .codeReuse: return ("policy", "The authorization code of the session was presented again; the session was revoked.")
        case .logout: return ("user", "The session was signed out.")
        case .stamp: return ("system", "The user's security stamp changed.")
        case .admin: return ("admin", "An administrator revoked the session.")
        case .erased: return ("admin", "The user was erased.")
        case .deviceSignOut: return ("user", "The person signed out on the device: every app's session there ended.")
        case .providerRevoked: return ("user", "The sign-in provider account of the session was revoked or deleted.")
        }
    }

    private static func stampReason(_ reason: StampRotationReason, initiator: String) -> (String, String) {
        switch reason {
        case .logoutEverywhere: return (initiator, "The user signed out everywhere.")
        case .disabled: return ("admin", "The account was disabled.")
        case .deleted: return ("admin", "The account was deleted.")
        case .erased: return ("admin", "The user was erased.")
        case .admin: return ("admin", "An administrator revoked every session.")
        }
    }
}

extension SignalStreamEvent {
    /// Every stream event type (the transmitter applies them to `ssf_streams`).
    static let types = [
        SignalStreamCreated.eventType, SignalStreamConfigured.eventType, SignalStreamStatusChanged.eventType,
        SignalStreamSubjectRemoved.eventType, SignalStreamSubjectAdded.eventType, SignalStreamVerificationRequested.eventType,
        SignalStreamDeleted.eventType,
    ]
}
