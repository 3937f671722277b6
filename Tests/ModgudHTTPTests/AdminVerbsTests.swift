import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 11: the admin verbs an operator needs: realm list, client delete, secret rotation,
/// and inviting a user.
final class AdminVerbsTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!
    static let admin: HTTPFields = [.authorization: "Bearer \(EmailSignInHarness.adminToken)", .contentType: "application/json"]

    override func tearDown() async throws {
        await harness?.close()
    }

    func testRealmListNeedsTheBootstrapToken() async throws {
        harness = try await EmailSignInHarness()
        try await harness.app.test(.router) { client in
            let listed = try await H.call(client, .get, "/admin/api/realms", "", headers: Self.admin)
            XCTAssertEqual(listed.status, .ok)
            let realms = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(listed.body.utf8)) as? [[String: Any]])
            XCTAssertEqual(realms.map { $0["Id"] as? String }, ["dev"])
            XCTAssertEqual(realms.first?["Hosts"] as? [String], ["localhost"])
            XCTAssertEqual(realms.first?["NativeGrantsEnabled"] as? Bool, true)
            let anonymous = try await H.call(client, .get, "/admin/api/realms", "", headers: [:])
            XCTAssertEqual(anonymous.status, .unauthorized)
        }
    }

    func testADeletedClientsTokensStopWorkingAtOnceAndItsIdIsRetired() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            let tokens = try await H.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com"))
            let access = try XCTUnwrap(tokens.json["access_token"] as? String)
            let refresh = try XCTUnwrap(tokens.json["refresh_token"] as? String)
            let bearer: HTTPFields = [.authorization: "Bearer \(access)"]
            let before = try await H.call(client, .get, "/connect/userinfo", "", headers: bearer)
            XCTAssertEqual(before.status, .ok)

            let deleted = try await H.call(client, .delete, "/admin/api/realms/dev/clients/app", "", headers: Self.admin)
            XCTAssertEqual(deleted.status, .noContent)
            let after = try await H.call(client, .get, "/connect/userinfo", "", headers: bearer)
            XCTAssertEqual(after.status, .unauthorized, "the access token died with its client")
            let refreshed = try await H.token(client, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", refresh)])
            XCTAssertEqual(refreshed.json["error"] as? String, "invalid_client")
            let shown = try await H.call(client, .get, "/admin/api/realms/dev/clients/app", "", headers: Self.admin)
            XCTAssertEqual(shown.status, .notFound)
            let again = try await H.call(client, .delete, "/admin/api/realms/dev/clients/app", "", headers: Self.admin)
            XCTAssertEqual(again.status, .notFound)
            let reused = try await H.call(
                client, .post, "/admin/api/realms/dev/clients", #"{"Id":"app","Type":"public","Grants":["urn:cocoar:otp"],"Scopes":["openid"]}"#,
                headers: Self.admin)
            XCTAssertEqual(reused.status, .badRequest)
            XCTAssertEqual(reused.json["title"] as? String, "Client.Deleted")
        }
    }

    func testRotatingASecretOverTheAPIShowsItOnceAndRetiresTheOldOne() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            func grant(_ secret: String) async throws -> H.Reply {
                try await H.token(
                    client, [("grant_type", "refresh_token"), ("client_id", "conf"), ("client_secret", secret), ("refresh_token", "unknown")])
            }
            let old = try await grant(harness.confidentialSecret)
            XCTAssertEqual(old.json["error"] as? String, "invalid_grant", "the old secret authenticates")
            let rotated = try await H.call(client, .post, "/admin/api/realms/dev/clients/conf/secret", "", headers: Self.admin)
            XCTAssertEqual(rotated.status, .ok)
            let secret = try XCTUnwrap(rotated.json["Secret"] as? String)
            XCTAssertEqual(secret.count, 43)
            let refused = try await grant(harness.confidentialSecret)
            XCTAssertEqual(refused.status, .unauthorized)
            XCTAssertEqual(refused.json["error"] as? String, "invalid_client")
            let accepted = try await grant(secret)
            XCTAssertEqual(accepted.json["error"] as? String, "invalid_grant", "the new secret authenticates")
            let database = try await harness.databaseText()
            XCTAssertFalse(database.contains(secret), "only the hash is stored")
            let publicClient = try await H.call(client, .post, "/admin/api/realms/dev/clients/app/secret", "", headers: Self.admin)
            XCTAssertEqual(publicClient.json["title"] as? String, "Client.PublicSecret")
        }
    }

    func testAnInvitedUserSignsInByCodeEvenWithSignUpOff() async throws {
        harness = try await EmailSignInHarness(settings: { $0.registrationPosture = .off })
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            let created = try await H.call(
                client, .post, "/admin/api/realms/dev/users", #"{"Email":"Grace@Example.com","FirstName":"Grace"}"#, headers: Self.admin)
            XCTAssertEqual(created.status, .created)
            XCTAssertEqual(created.json["Email"] as? String, "grace@example.com")
            XCTAssertEqual(created.json["Status"] as? String, "active")
            let duplicate = try await H.call(client, .post, "/admin/api/realms/dev/users", #"{"Email":"grace@example.com"}"#, headers: Self.admin)
            XCTAssertEqual(duplicate.status, .conflict)
            XCTAssertEqual(duplicate.json["title"] as? String, "User.AlreadyExists")
            let invalid = try await H.call(client, .post, "/admin/api/realms/dev/users", #"{"Email":"not an address"}"#, headers: Self.admin)
            XCTAssertEqual(invalid.json["title"] as? String, "Email.Invalid")

            _ = try await H.requestCode(client, "grace@example.com")
            let signedIn = try await H.redeemCode(client, "grace@example.com", try await harness.code(for: "grace@example.com"))
            XCTAssertEqual(signedIn.status, .ok, "a confirmed user with no password, ready for a code")
            let storedID = try await harness.core.pool.query("SELECT user_id::text FROM users").first!.decode(String.self, at: 0)
            XCTAssertEqual(created.json["Id"] as? String, storedID)
        }
    }
}
