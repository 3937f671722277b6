import Foundation

/// A device authorization (RFC 8628): a device without a browser (a TV, a CLI) asks for one,
/// shows its user code, and polls the token endpoint while the user approves it on a phone.
/// Approval needs a user-verified passkey assertion and shows the client, the device's own
/// description and the network it asked from (the cross-device BCP's "did you start this?").
/// One approval, one redemption, both decided by the stream's expected version.
public enum DeviceAuthorization: Aggregate {
    public static let streamType = "device-authorization"
    /// Section 3.2 `expires_in`: ten minutes, long enough to find the phone, short enough that
    /// a phished code goes stale (the BCP's "short lifetimes").
    public static let lifetime: TimeInterval = 600
    /// Section 3.2 `interval`: the default, and what section 3.5's `slow_down` adds each time.
    public static let interval = 5

    /// Where the authorization stands, as the device's poll sees it (section 3.5).
    public enum Status: Sendable, Equatable {
        /// No such authorization (or not for this client, or not this device's secret).
        case unknown
        /// Waiting for the user: `authorization_pending`.
        case pending
        /// Approved: the poll gets the tokens.
        case approved
        /// The user said no: `access_denied`.
        case denied
        /// Past its lifetime: `expired_token`.
        case expired
        /// Its tokens went out already: `invalid_grant`.
        case redeemed
    }

    public struct State: Sendable, Equatable {
        public var requested: DeviceAuthorizationRequested?
        public var approved: DeviceAuthorizationApproved?
        public var denied = false
        public var redeemed = false

        /// What a poll by `clientID` with `secretHash` learns at `now`.
        public func status(clientID: String, secretHash: String, at now: Date) -> Status {
            guard let requested, requested.clientID == clientID, Self.same(requested.deviceSecretHash, secretHash) else { return .unknown }
            if redeemed { return .redeemed }
            if denied { return .denied }
            if now >= requested.expiresAt { return .expired }
            return approved == nil ? .pending : .approved
        }

        /// Whether the user can still approve or deny it at `now`.
        public func awaitsUser(at now: Date) -> Bool {
            guard let requested else { return false }
            return approved == nil && !denied && !redeemed && now < requested.expiresAt
        }

        /// Hashes compared without an early exit.
        static func same(_ left: String, _ right: String) -> Bool {
            let (a, b) = (Array(left.utf8), Array(right.utf8))
            guard a.count == b.count else { return false }
            return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
        }
    }

    public enum Command: Sendable {
        case request(DeviceAuthorizationRequested)
        /// The user approves: only with a user-verified passkey assertion (`userVerified`).
        case approve(userID: UUID, authTime: Date, amr: [String], userVerified: Bool, via: String)
        case deny(userID: UUID?)
        /// The device's poll redeems it for the token family `familyID`.
        case redeem(clientID: String, secretHash: String, familyID: UUID)
    }

    public static let initialState = State()

    public static func decide(_ command: Command, state: State, now: Date) throws(DomainError) -> [DeviceAuthorizationEvent] {
        switch command {
        case .request(let requested):
            guard state.requested == nil else { throw DomainError("DeviceAuthorization.Exists", "The device authorization exists.", kind: .conflict) }
            guard requested.expiresAt > now, requested.interval >= interval else {
                throw DomainError("DeviceAuthorization.Invalid", "A device authorization lives in the future and polls at most every 5 s.")
            }
            return [.requested(requested)]
        case .approve(let userID, let authTime, let amr, let userVerified, let via):
            guard state.awaitsUser(at: now), let requested = state.requested else { throw notAwaiting }
            // The BCP's answer to consent phishing: the approver proves it is them on this
            // phone, with user verification, not merely that a session is open.
            guard userVerified else {
                throw DomainError("DeviceAuthorization.UserVerificationRequired", "Approving a device needs a passkey with user verification.")
            }
            return [.approved(DeviceAuthorizationApproved(authorizationID: requested.authorizationID, userID: userID, authTime: authTime, amr: amr, via: via))]
        case .deny(let userID):
            guard state.awaitsUser(at: now), let requested = state.requested else { throw notAwaiting }
            return [.denied(DeviceAuthorizationDenied(authorizationID: requested.authorizationID, userID: userID))]
        case .redeem(let clientID, let secretHash, let familyID):
            switch state.status(clientID: clientID, secretHash: secretHash, at: now) {
            case .approved: return [.redeemed(DeviceAuthorizationRedeemed(authorizationID: state.requested!.authorizationID, familyID: familyID))]
            case let other: throw Self.refusal(other)
            }
        }
    }

    /// The refusal of a poll in `status` (section 3.5's errors, by code).
    public static func refusal(_ status: Status) -> DomainError {
        switch status {
        case .pending: DomainError("DeviceAuthorization.Pending", "The user has not approved the device yet.")
        case .denied: DomainError("DeviceAuthorization.Denied", "The user denied the device.")
        case .expired: DomainError("DeviceAuthorization.Expired", "The device code expired: ask for a new one.")
        case .unknown, .redeemed, .approved: DomainError("DeviceAuthorization.Invalid", "Invalid device code.")
        }
    }

    static let notAwaiting = DomainError("DeviceAuthorization.NotPending", "This code is not waiting for approval (expired, used or unknown).", kind: .notFound)

    public static func evolve(_ state: State, _ event: DeviceAuthorizationEvent) -> State {
        var next = state
        switch event {
        case .requested(let requested): next.requested = requested
        case .approved(let approved): next.approved = approved
        case .denied: next.denied = true
        case .redeemed: next.redeemed = true
        }
        return next
    }
}
