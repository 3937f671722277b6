import EventSourcing
import Foundation
import ModgudDomain
import ModgudService

/// The demo realm and client of `modgud dev`, created once and left alone afterwards.
enum DevSeed {
    static let realmID = "dev"
    static let clientID = "demo-app"
    /// The operator `modgud dev` makes for its console (issue 31).
    static let operatorEmail = "operator@example.com"

    static func seed(_ core: ModgudCore, port: Int) async throws {
        let metadata = EventMetadata(actor: "system:dev-seed")
        let realm = await core.realmActors.actor(for: StreamNames.realm(realmID))
        if try await !realm.current().state.exists {
            let settings = RealmSettings(
                hosts: ["localhost", "127.0.0.1"], displayName: "Modgud dev", primaryDomain: "localhost",
                publicBaseURL: "http://localhost:\(port)", nativeGrants: NativeGrantSettings(enabled: true), registrationPosture: .jitOnOtp,
                magicLinkEnabled: true)
            _ = try await realm.execute(.create(id: realmID, settings: settings), now: Date(), metadata: metadata)
        }
        if try await realm.current().state.activeKey == nil {
            try await core.keys.rotate(realm: realmID, now: Date(), metadata: metadata)
        }
        let client = await core.clientActors.actor(for: StreamNames.client(realm: realmID, clientID: clientID))
        if try await !client.current().state.exists {
            let settings = ClientSettings(
                type: .public, displayName: "Demo app", grants: [.otp, .magic, .passkey, .refreshToken],
                allowedScopes: ["openid", "email", "profile", "offline_access"], rpID: "localhost")
            _ = try await client.execute(.register(id: clientID, settings: settings, secretHash: nil), now: Date(), metadata: metadata)
        }
        if try await !core.realmActors.actor(for: StreamNames.realm(OperatorConsole.Settings().realm)).current().state.exists {
            _ = try await OperatorConsole(core: core, settings: .init()).addOperator(email: operatorEmail, rpID: "localhost", metadata: metadata)
        }
    }
}
