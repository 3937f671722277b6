import EventSourcing
import Foundation
import ModgudDomain

extension OperatorConsole {
    /// What `setUp` did, for the command that ran it.
    public struct SetUp: Sendable {
        public var realmCreated: Bool
        public var clientCreated: Bool
        public var userID: UUID
        public var userCreated: Bool
        public var roleGranted: Bool
    }

    /// Makes `email` an operator: creates the operator realm (no self-registration; its one host,
    /// under `.invalid`, serves no app) with a signing key and the console client when missing, the user when
    /// missing, and grants the role. Safe to run again; every step is an event with `metadata`.
    /// - Parameter rpID: the console's host, for operators' passkeys (the console client's RP-ID).
    public func addOperator(email: String, rpID: String? = nil, metadata: EventMetadata) async throws -> SetUp {
        let admin = AdminService(core: core)
        let realmID = settings.realm
        let realmActor = await core.realmActors.actor(for: StreamNames.realm(realmID))
        var realmCreated = false
        if try await !realmActor.current().state.exists {
            let realmSettings = RealmSettings(hosts: ["\(realmID).console.invalid"], displayName: "Modgud operators", registrationPosture: .off, magicLinkEnabled: false)
            _ = try await admin.createRealm(realmID, settings: realmSettings, metadata: metadata)
            realmCreated = true
        }
        if try await realmActor.current().state.activeKey == nil {
            try await core.keys.rotate(realm: realmID, now: core.now(), metadata: metadata)
        }
        var clientCreated = false
        if try await !admin.client(realm: realmID, id: Self.clientID).exists {
            let client = ClientSettings(type: .public, displayName: "Operator console", grants: [.otp, .passkey], allowedScopes: ["openid"], rpID: rpID)
            _ = try await admin.createClient(realm: realmID, id: Self.clientID, settings: client, metadata: metadata)
            clientCreated = true
        } else if let rpID, try await admin.client(realm: realmID, id: Self.clientID).settings?.rpID != rpID {
            _ = try await admin.updateClient(realm: realmID, id: Self.clientID, metadata: metadata) { $0.rpID = rpID }
        }
        var userCreated = false
        let userID: UUID
        if let found = try await admin.findUser(realm: realmID, email) {
            userID = found
        } else {
            userID = try await admin.createUser(realm: realmID, email: email, firstName: nil, lastName: nil, username: nil, metadata: metadata).id
            userCreated = true
        }
        let before = try await core.user(realm: realmID, id: userID).roles.contains(Self.role)
        _ = try await admin.setRole(Self.role, granted: true, realm: realmID, userID: userID, metadata: metadata)
        return SetUp(realmCreated: realmCreated, clientCreated: clientCreated, userID: userID, userCreated: userCreated, roleGranted: !before)
    }
}
