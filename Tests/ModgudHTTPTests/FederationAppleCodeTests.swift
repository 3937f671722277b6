import Foundation
import HTTPTypes
import HummingbirdTesting
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 48: Auth0's native Sign in with Apple form, `apple-authz-code`: the app's authorization
/// code is redeemed at Apple's token endpoint (the stand-in's, which checks the client secret as
/// Apple does) with a client secret signed by the team's key, which is set through the admin API,
/// sealed, and never shown.
final class FederationAppleCodeTests: XCTestCase {
    typealias H = EmailSignInHarness
    typealias X = FederationExchangeTests
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    static let admin: HTTPFields = [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"]
    static let appleCode = "http://auth0.com/oauth/token-type/apple-authz-code"

    static func keyBody(_ team: (teamID: String, keyID: String, pem: String), tokenURL: String, clientID: String = "com.example.app") -> String {
        H.jsonBody(["TeamId": team.teamID, "KeyId": team.keyID, "ClientId": clientID, "PrivateKey": team.pem, "TokenUrl": tokenURL])
    }

    func testAnAppleAuthorizationCodeIsRedeemedWithTheTeamsSealedKey() async throws {
        let idp = try StandInProvider()
        harness = try await X.start(idp)
        let harness = self.harness!
        let team = try await idp.teamKey()
        try await harness.app.test(.live) { client in
            let path = "/admin/api/realms/dev/federated-providers/apple/apple-key"
            // Refused: not a P-256 key, ids not Apple's shape, a client id the provider does not accept, no such provider.
            for (body, status) in [
                (Self.keyBody((team.teamID, team.keyID, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"), tokenURL: idp.appleTokenURL), 400),
                (Self.keyBody(("team", team.keyID, team.pem), tokenURL: idp.appleTokenURL), 400),
                (Self.keyBody(team, tokenURL: idp.appleTokenURL, clientID: "com.someone.else"), 400),
                (Self.keyBody(team, tokenURL: "http://apple.example/token"), 400),
            ] {
                let reply = try await H.call(client, .put, path, body, headers: Self.admin)
                XCTAssertEqual(reply.status.code, status, reply.body)
            }
            let noProvider = try await H.call(
                client, .put, "/admin/api/realms/dev/federated-providers/google/apple-key", Self.keyBody(team, tokenURL: idp.appleTokenURL),
                headers: Self.admin)
            XCTAssertEqual(noProvider.status, .notFound, noProvider.body)

            let set = try await H.call(client, .put, path, Self.keyBody(team, tokenURL: idp.appleTokenURL), headers: Self.admin)
            XCTAssertEqual(set.status, .ok, set.body)
            let providers = try XCTUnwrap(set.json["FederatedProviders"] as? [[String: Any]], set.body)
            let endpoint = try XCTUnwrap(providers.first { $0["Id"] as? String == "apple" }?["AppleTokenEndpoint"] as? [String: Any])
            XCTAssertEqual(endpoint["TeamId"] as? String, team.teamID)
            XCTAssertTrue((endpoint["PublicKey"] as? String ?? "").hasPrefix("-----BEGIN PUBLIC KEY-----"))
            XCTAssertFalse(set.body.contains("PRIVATE KEY"), "the key is never shown")
            // The key's secret part is in no event: its base64 lines are not anywhere in the log.
            let keyLine = try XCTUnwrap(team.pem.split(separator: "\n").dropFirst().first.map(String.init))
            let pattern = "%" + keyLine.prefix(40) + "%"
            let leaked = try await harness.core.pool.query("SELECT count(*) FROM events WHERE payload::text LIKE \(pattern)").first?.decode(Int.self, at: 0)
            XCTAssertEqual(leaked, 0)
            // A patch of the provider list keeps the key (it is set apart); the realm asks for names.
            let patched = try await H.call(
                client, .patch, "/admin/api/realms/dev",
                #"{"RegistrationFields":{"Firstname":"Optional","Lastname":"Optional"},"FederatedProviders":[{"Id":"apple","Kind":"apple","JwksUrl":"\#(idp.appleJWKS)","Audiences":["com.example.app"]}]}"#,
                headers: Self.admin)
            let kept = ((patched.json["Realm"] as? [String: Any])?["FederatedProviders"] as? [[String: Any]])?.first?["AppleTokenEndpoint"]
            XCTAssertNotNil(kept, patched.body)

            // Auth0.swift's login(appleAuthorizationCode:fullName:): the code, and the name as user_profile.
            func exchange(_ code: String) async throws -> H.Reply {
                try await H.token(
                    client,
                    [
                        ("grant_type", X.exchange), ("client_id", "app"), ("subject_token", code), ("subject_token_type", Self.appleCode),
                        ("scope", "openid profile email offline_access"), ("user_profile", #"{"name":{"firstName":"Tim","lastName":"Apple"}}"#),
                    ], headers: [.contentType: "application/x-www-form-urlencoded"])
            }
            let code = try await idp.appleCode(["email": "code-user@privaterelay.appleid.com", "sub": "000555.code"])
            let signedUp = try await exchange(code)
            XCTAssertEqual(signedUp.status, .ok, signedUp.body)
            let user = try XCTUnwrap(UUID(uuidString: try X.subject(signedUp)))
            let profile = try await harness.core.administration.users.profile(realm: "dev", userID: user)
            XCTAssertEqual(profile.profile.email, "code-user@privaterelay.appleid.com")
            XCTAssertEqual(profile.profile.firstName, "Tim", "Auth0's user_profile names the person")
            XCTAssertEqual(profile.profile.lastName, "Apple")
            XCTAssertEqual(profile.state.identities, ["apple"])
            // Apple spends a code once: the second redemption is Apple's refusal, named.
            let again = try await exchange(code)
            XCTAssertTrue((again.json["error_description"] as? String ?? "").hasPrefix("authorization_code:"), again.body)
            let counts = try await idp.redemptions()
            XCTAssertEqual(counts, ["ok": 1, "refused": 1], "the stand-in accepted our client secret once and refused the spent code")
            // A later code signs the same person in.
            let second = try await exchange(try await idp.appleCode(["sub": "000555.code", "email": NSNull()]))
            XCTAssertEqual(try X.subject(second), user.uuidString.lowercased())
            // The key removed: codes are refused before Apple is asked.
            let removed = try await H.call(client, .delete, path, "", headers: Self.admin)
            XCTAssertEqual(removed.status, .ok, removed.body)
            let refused = try await exchange(try await idp.appleCode(["sub": "000555.code"]))
            XCTAssertTrue((refused.json["error_description"] as? String ?? "").hasPrefix("issuer:"), refused.body)
            let after = try await idp.redemptions()
            XCTAssertEqual(after, ["ok": 2, "refused": 1])
        }
    }
}
