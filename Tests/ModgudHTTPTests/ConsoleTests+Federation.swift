import Foundation
import HTTPTypes
import HummingbirdTesting
import ModgudDomain
@testable import ModgudService
import XCTest

/// Issue 48: the console shows a realm's identity providers and a person's linked provider
/// accounts, and an operator unlinks one (the person's event, the operator its actor).
extension ConsoleTests {
    func testAnOperatorSeesTheRealmsProvidersAndUnlinksAPersonsAppleAccount() async throws {
        let idp = try StandInProvider()
        let app = try await start()
        let harness = harness!
        _ = try await harness.core.administration.realms.update("dev", metadata: .init()) {
            var apple = FederatedProvider.apple(audiences: ["com.example.app"])
            apple.jwksURL = idp.appleJWKS
            $0.federatedProviders = [apple]
        }
        _ = try await harness.core.administration.clients.update(realm: "dev", id: "app", metadata: .init()) { $0.grants.insert(.tokenExchange) }
        try await app.test(.router) { client in
            let nonce = try await FederationExchangeTests.nonce(client)
            let token = try await idp.mint("apple", ["nonce": nonce.hash, "email": "linked@privaterelay.appleid.com"])
            let signedUp = try await FederationExchangeTests.exchange(client, token, nonce: nonce.nonce)
            XCTAssertEqual(signedUp.status, .ok, signedUp.body)
            let user = try FederationExchangeTests.subject(signedUp)
            let session = try await Self.session(client, harness)

            let realm = try await H.call(client, .get, "/console/realms/dev", "", headers: session.headers)
            XCTAssertTrue(
                realm.body.contains("<td>apple</td><td>apple</td><td>com.example.app</td><td>EmailCode</td><td>required</td><td>not set</td>"),
                realm.body)
            let page = try await H.call(client, .get, "/console/realms/dev/users/\(user)", "", headers: session.headers)
            XCTAssertTrue(page.body.contains("<h2>Sign-in providers</h2>"), page.body)
            XCTAssertTrue(page.body.contains("<td>apple</td><td>apple</td>"), page.body)
            XCTAssertTrue(page.body.contains("/identities/apple/unlink"), page.body)
            XCTAssertTrue(page.body.contains("federation:apple"), "registered via the provider: \(page.body)")

            let unlinked = try await H.call(
                client, .post, "/console/realms/dev/users/\(user)/identities/apple/unlink", "_csrf=\(session.csrf)", headers: session.headers)
            XCTAssertEqual(unlinked.status, .seeOther, unlinked.body)
            let after = try await H.call(client, .get, "/console/realms/dev/users/\(user)", "", headers: session.headers)
            XCTAssertTrue(after.body.contains("No Apple, Google or other provider account is linked."), after.body)
            let history = try await H.call(client, .get, "/console/realms/dev/users/\(user)/audit", "", headers: session.headers)
            XCTAssertTrue(history.body.contains("user.identity_unlinked"), history.body)
            XCTAssertTrue(history.body.contains("operator \(Self.operatorEmail)"), history.body)
        }
        let links = try await harness.core.pool.query("SELECT count(*) FROM federated_identities").first?.decode(Int.self, at: 0)
        XCTAssertEqual(links, 0)
    }
}
