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
        return try await ServiceRefusal.translating {
            let realmID = settings.realm
            var realmCreated = false
            if try await !admin.realms.get(realmID).exists {
                let realmSettings = RealmSettings(hosts: ["\(realmID).console.invalid"], displayName: "Modgud operators", registrationPosture: .off, magicLinkEnabled: false)
                _ = try await admin.realms.create(realmID, settings: realmSettings, metadata: metadata)
                realmCreated = true
            }
            if try await admin.realms.get(realmID).activeKey == nil {
                _ = try await admin.realms.rotateSigningKey(realm: realmID, algorithm: .es256, metadata: metadata)
            }
            var clientCreated = false
            if try await !admin.clients.get(realm: realmID, id: Self.clientID).exists {
                let client = ClientSettings(type: .public, displayName: "Operator console", grants: [.otp, .passkey], allowedScopes: ["openid"], rpID: rpID)
                // Its native grants serve the console only: the realm's flag stays off (issue 65, item 7).
                _ = try await admin.clients.create(realm: realmID, id: Self.clientID, settings: client, metadata: metadata, checkingNativeGrants: false)
                clientCreated = true
            } else if let rpID, try await admin.clients.get(realm: realmID, id: Self.clientID).settings?.rpID != rpID {
                _ = try await admin.clients.update(realm: realmID, id: Self.clientID, metadata: metadata) { $0.rpID = rpID }
            }
            var userCreated = false
            let userID: UUID
            if let found = try await admin.users.find(realm: realmID, email) {
                userID = found
            } else {
                userID = try await admin.users.create(realm: realmID, email: email, firstName: nil, lastName: nil, username: nil, metadata: metadata).id
                userCreated = true
            }
            let before = try await admin.users.state(realm: realmID, id: userID).roles.contains(Self.role)
            _ = try await admin.users.setRole(Self.role, granted: true, realm: realmID, userID: userID, metadata: metadata)
            return SetUp(realmCreated: realmCreated, clientCreated: clientCreated, userID: userID, userCreated: userCreated, roleGranted: !before)
        }
    }
}
