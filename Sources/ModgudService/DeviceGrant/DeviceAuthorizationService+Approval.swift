import EventSourcing
import EventStorePostgres
import Foundation
import ModgudDomain

/// The person's side (RFC 8628 section 3.3): a typed user code shows what asks, and a
/// user-verified passkey assertion approves it; or the person says they did not start it.
/// Following the cross-device BCP (draft-ietf-oauth-cross-device-security section 6.1): the
/// requesting client, the device's own description and its rough network are shown before
/// anything is approved; the code lives ten minutes, is approved once, and typing codes is
/// rate-limited (`device.user-code`, counted by the HTTP layer before the lookup).
extension DeviceAuthorizationService {
    /// Who approves: a signed-in app (its client, and the person its token is for) or the
    /// realm's web page (whoever's passkey asserts).
    public enum Approver: Sendable, Equatable {
        case app(clientID: String, userID: UUID)
        case web

        public var via: String {
            switch self {
            case .app: "app"
            case .web: "web"
            }
        }

        public var userID: UUID? {
            if case .app(_, let userID) = self { return userID }
            return nil
        }

        public var clientID: String? {
            if case .app(let clientID, _) = self { return clientID }
            return nil
        }
    }

    /// What the person is shown.
    public struct Shown: Sendable {
        public var authorizationID: UUID
        /// The client that asked (its id; the HTTP layer adds its name).
        public var clientID: String
        public var scopes: [String]
        public var device: Device
        public var expiresAt: Date
        /// Seconds left at the time of the answer.
        public var expiresIn: Int
    }

    /// The one answer for a code that is malformed, unknown, expired, approved, denied or used:
    /// typing codes tells nothing but "not a live code".
    public static let unknownCode = ServiceRefusal(.notFound, "Device.UnknownCode", "No device is waiting for this code: check it, or start again on the device.")

    /// A typed user code: the live authorization it names and a device-approval ceremony.
    public func lookUp(userCode typed: String, realm: RealmDirectory.Entry, approver: Approver, metadata: EventMetadata) async throws
        -> (shown: Shown, ceremony: PasskeyService.Begun)
    {
        guard let code = UserCode(typed: typed),
            let (id, device) = try await DeviceAuthorizationsTable.authorization(
                realm: realm.realmID, userCodeHash: userCodeHash(code), now: now(), pool: pool)
        else { throw Self.unknownCode }
        let state = try await authorizations.actor(for: StreamNames.deviceAuthorization(realm: realm.realmID, authorizationID: id)).current().state
        guard state.awaitsUser(at: now()), let requested = state.requested else { throw Self.unknownCode }
        let ceremony = try await passkeys.beginDeviceApproval(
            realm: realm, authorizationID: id, client: try await approvingClient(approver, realm: realm.realmID), userID: approver.userID,
            metadata: metadata)
        return (Shown(authorizationID: id, clientID: requested.clientID, scopes: requested.scopes, device: device, expiresAt: requested.expiresAt,
                expiresIn: Self.secondsLeft(requested, now())), ceremony)
    }

    /// The person approves with the ceremony's assertion (user verification required). The
    /// approval commits with the assertion's use, at the version read here, so of two racing
    /// approvals one wins. Refusals: `Passkey.refused` (an OAuth `invalid_grant`) for the
    /// assertion, `unknownCode` for an authorization no longer waiting.
    public func approve(
        realm: RealmDirectory.Entry, authorizationID: UUID, ceremonyID: UUID, assertion: String, approver: Approver, metadata: EventMetadata
    ) async throws -> Shown {
        let stream = StreamNames.deviceAuthorization(realm: realm.realmID, authorizationID: authorizationID)
        let (state, version) = try await authorizations.actor(for: stream).current()
        guard state.awaitsUser(at: now()), let requested = state.requested else { throw Self.unknownCode }
        let time = now()
        do {
            _ = try await passkeys.assertDeviceApproval(
                realm: realm.realmID, ceremonyID: ceremonyID, authorizationID: authorizationID, assertion: assertion,
                client: try await approvingClient(approver, realm: realm.realmID), userID: approver.userID, metadata: metadata
            ) { who in
                let events = try DeviceAuthorization.decide(
                    .approve(userID: who.userID, authTime: time, amr: who.amr, userVerified: who.userVerified, via: approver.via), state: state, now: time)
                return StreamWrite(stream: stream, expected: ExpectedVersion(current: version), events: try events.map { try $0.newEvent() })
            }
        } catch let refused as DomainError {
            throw ServiceRefusal(refused)
        } catch EventStoreError.wrongExpectedVersion(let conflicted, _, _) where conflicted == stream.id {
            throw Self.unknownCode
        }
        let device = try await DeviceAuthorizationsTable.device(realm: realm.realmID, authorizationID: authorizationID, pool: pool)
        return Shown(
            authorizationID: authorizationID, clientID: requested.clientID, scopes: requested.scopes, device: device ?? Device(name: nil, network: nil),
            expiresAt: requested.expiresAt, expiresIn: Self.secondsLeft(requested, now()))
    }

    /// The person did not start it: the device's next poll is `access_denied`. The ceremony the
    /// lookup began is spent, so only someone who typed the code can deny.
    public func deny(realm: RealmDirectory.Entry, authorizationID: UUID, ceremonyID: UUID, approver: Approver, metadata: EventMetadata) async throws {
        guard
            try await passkeys.spendDeviceApproval(
                realm: realm.realmID, ceremonyID: ceremonyID, authorizationID: authorizationID, clientID: approver.clientID, userID: approver.userID,
                metadata: metadata)
        else { throw Self.unknownCode }
        let actor = await authorizations.actor(for: StreamNames.deviceAuthorization(realm: realm.realmID, authorizationID: authorizationID))
        do {
            _ = try await actor.execute(.deny(userID: approver.userID), now: now(), metadata: metadata)
        } catch is DomainError {
            throw Self.unknownCode
        }
    }

    static func secondsLeft(_ requested: DeviceAuthorizationRequested, _ now: Date) -> Int {
        max(0, Int(requested.expiresAt.timeIntervalSince(now).rounded(.down)))
    }

    /// The approving app's client settings (its RP-ID and origins); nil for the web page.
    private func approvingClient(_ approver: Approver, realm: String) async throws -> (id: String, settings: ClientSettings)? {
        guard let clientID = approver.clientID else { return nil }
        guard let settings = try await passkeys.clients.enabledClient(realm: realm, clientID: clientID) else { throw Self.unknownCode }
        return (clientID, settings)
    }
}
