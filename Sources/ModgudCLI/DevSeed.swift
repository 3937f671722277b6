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

    static func seed(admin: Administration, console: OperatorConsole, port: Int) async throws {
        let metadata = EventMetadata(actor: "system:dev-seed")
        if try await !admin.realms.get(realmID).exists {
            let settings = RealmSettings(
                hosts: ["localhost", "127.0.0.1"], displayName: "Modgud dev", primaryDomain: "localhost",
                publicBaseURL: "http://localhost:\(port)", nativeGrants: NativeGrantSettings(enabled: true), registrationPosture: .jitOnOtp,
                magicLinkEnabled: true)
            _ = try await admin.realms.create(realmID, settings: settings, metadata: metadata)
        }
        if try await admin.realms.get(realmID).activeKey == nil {
            _ = try await admin.realms.rotateSigningKey(realm: realmID, algorithm: .es256, metadata: metadata)
        }
        if try await !admin.clients.get(realm: realmID, id: clientID).exists {
            let settings = ClientSettings(
                type: .public, displayName: "Demo app", grants: [.otp, .magic, .passkey, .refreshToken, .recoveryCode],
                allowedScopes: ["openid", "email", "profile", "offline_access"], rpID: "localhost")
            _ = try await admin.clients.create(realm: realmID, id: clientID, settings: settings, metadata: metadata)
        }
        if try await !admin.realms.get(OperatorConsole.Settings().realm).exists {
            _ = try await console.addOperator(email: operatorEmail, rpID: "localhost", metadata: metadata)
        }
    }
}
