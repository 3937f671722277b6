import Foundation

/// A Shared Signals receiver's event stream (OpenID SSF 1.0 section 8): one per receiver
/// client, keyed by realm and client. Deleting it retires its `stream_id`; creating it again
/// starts a new one.
public enum SignalStream: Aggregate {
    public static let streamType = "ssf-stream"

    /// Who changed a stream's status when it was not the receiver: it then hears of it with a
    /// stream-updated SET (SSF 1.0 section 8.1.5).
    public static let operatorActor = "operator"

    /// The least time between two verification requests (`min_verification_interval`).
    public static let minVerificationInterval: TimeInterval = 5

    public struct State: Sendable, Equatable {
        public var streamID: String?
        public var clientID: String?
        public var issuer: String?
        public var configuration: SignalStreamConfiguration?
        public var status = SignalStreamStatus.enabled
        public var reason: String?
        /// Users removed from the stream (`default_subjects` is `ALL`).
        public var removedSubjects: Set<UUID> = []
        public var lastVerification: Date?

        public var exists: Bool { streamID != nil }
    }

    public enum Command: Sendable {
        case create(streamID: String, clientID: String, issuer: String, configuration: SignalStreamConfiguration)
        case configure(SignalStreamConfiguration)
        case setStatus(SignalStreamStatus, reason: String?, by: String)
        case removeSubject(UUID)
        case addSubject(UUID)
        case requestVerification(state: String?)
        case delete
    }

    public static let initialState = State()

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [SignalStreamEvent] {
        if case .create(let streamID, let clientID, let issuer, let configuration) = command {
            // SSF 1.0 section 8.1.1.1: one stream per receiver here, so a second is a conflict.
            guard !state.exists else { throw DomainError.conflict("SignalStream.Exists", "This receiver already has a stream.") }
            try configuration.validate()
            return [.created(SignalStreamCreated(streamID: streamID, clientID: clientID, issuer: issuer, configuration: configuration))]
        }
        guard state.exists, let current = state.configuration else { throw DomainError.notFound("SignalStream.NotFound", "No such stream.") }
        switch command {
        case .create:
            return []
        case .configure(let configuration):
            try configuration.validate()
            return configuration == current ? [] : [.configured(SignalStreamConfigured(configuration: configuration))]
        case .setStatus(let status, let reason, let by):
            if let reason, reason.count > 256 { throw DomainError("SignalStream.InvalidReason", "A reason is at most 256 characters.") }
            guard status != state.status || reason != state.reason else { return [] }
            return [.statusChanged(SignalStreamStatusChanged(status: status, reason: reason, by: by))]
        case .removeSubject(let userID):
            return state.removedSubjects.contains(userID) ? [] : [.subjectRemoved(SignalStreamSubjectRemoved(userID: userID))]
        case .addSubject(let userID):
            return state.removedSubjects.contains(userID) ? [.subjectAdded(SignalStreamSubjectAdded(userID: userID))] : []
        case .requestVerification(let verificationState):
            if let verificationState, verificationState.count > 256 {
                throw DomainError("SignalStream.InvalidState", "A verification state is at most 256 characters.")
            }
            // Section 8.1.4.2: requests more frequent than min_verification_interval get a 429.
            if let last = state.lastVerification, now.timeIntervalSince(last) < minVerificationInterval {
                throw DomainError.tooFrequent("SignalStream.TooFrequent", "Verification requests are at most one per \(Int(minVerificationInterval)) seconds.")
            }
            return [.verificationRequested(SignalStreamVerificationRequested(state: verificationState, requestedAt: now))]
        case .delete:
            return [.deleted(SignalStreamDeleted())]
        }
    }

    public static func evolve(_ state: State, _ event: SignalStreamEvent) -> State {
        var next = state
        switch event {
        case .created(let created):
            next = State()
            next.streamID = created.streamID
            next.clientID = created.clientID
            next.issuer = created.issuer
            next.configuration = created.configuration
        case .configured(let configured): next.configuration = configured.configuration
        case .statusChanged(let changed):
            next.status = changed.status
            next.reason = changed.reason
        case .subjectRemoved(let removed): next.removedSubjects.insert(removed.userID)
        case .subjectAdded(let added): next.removedSubjects.remove(added.userID)
        case .verificationRequested(let requested): next.lastVerification = requested.requestedAt
        case .deleted: next = State()
        }
        return next
    }
}
