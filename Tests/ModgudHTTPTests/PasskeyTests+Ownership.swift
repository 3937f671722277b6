import EventSourcing
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Who may see and revoke passkeys: the bearer's own only, the realm flag, and operators
/// (split from `PasskeyTests.swift`).
extension PasskeyTests {
    func testBearerOwnershipAndTheRealmFlag() async throws {
        let (harness, steps) = try await makeHarness()
        try await harness.app.test(.router) { client in
            let ada = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            let bob = try await steps.signInWithCode(client, "bob@example.com", clientID: "ios")
            let (_, adaPasskey) = try await steps.enroll(client, token: ada, origin: "https://ios.acme.test")
            for (method, path) in [(HTTPRequest.Method.get, "/connect/passkey"), (.delete, "/connect/passkey/\(adaPasskey)"), (.post, "/connect/passkey/enroll/begin")] {
                let anonymousStatus = try await H.call(client, method, path, "", headers: [:]).status
                XCTAssertEqual(anonymousStatus, .unauthorized, path)
                let badTokenStatus = try await H.call(client, method, path, "", headers: PasskeySteps.bearer("not-a-token")).status
                XCTAssertEqual(badTokenStatus, .unauthorized, path)
            }
            let theirs = try await H.call(client, .delete, "/connect/passkey/\(adaPasskey)", "", headers: PasskeySteps.bearer(bob))
            XCTAssertEqual(theirs.status, .notFound, "another user's passkey: 404, never 403")
            let unknown = try await H.call(client, .delete, "/connect/passkey/\(UUID())", "", headers: PasskeySteps.bearer(bob))
            XCTAssertEqual(unknown.status, .notFound)
            XCTAssertEqual(unknown.body, theirs.body, "no existence oracle")
            let bobs = try await H.call(client, .get, "/connect/passkey", "", headers: PasskeySteps.bearer(bob))
            XCTAssertEqual(bobs.body, "[]")
            let adas = try await H.call(client, .get, "/connect/passkey", "", headers: PasskeySteps.bearer(ada))
            XCTAssertTrue(adas.body.contains(adaPasskey), "still there")
        }
        _ = try await harness.core.administration.realms.update("dev", metadata: .init()) { $0.nativeGrants.enabled = false }
        let fresh = try ModgudCore(pool: harness.database.pool, masterKey: H.masterKey)
        try await buildApplication(core: fresh, configuration: harness.configuration).test(.router) { client in
            for (method, path) in [
                (HTTPRequest.Method.get, "/connect/passkey"), (.delete, "/connect/passkey/\(UUID())"), (.post, "/connect/passkey/enroll/begin"),
                (.post, "/connect/passkey/enroll"), (.post, "/connect/passkey/begin"),
            ] {
                let reply = try await H.call(client, method, path, "", headers: [:])
                XCTAssertEqual(reply.status, .badRequest, path)
                XCTAssertEqual(reply.json["title"] as? String, "NativeGrants.Disabled", path)
            }
            let grant = try await H.token(client, [("grant_type", "urn:cocoar:passkey"), ("client_id", "ios")])
            XCTAssertEqual(grant.json["error"] as? String, "unsupported_grant_type")
        }
    }

    func testAdminListsAndRevokesPasskeysAndWarnsOnRPIDChange() async throws {
        let (harness, steps) = try await makeHarness()
        let admin: HTTPFields = [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"]
        try await harness.app.test(.router) { client in
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "ios")
            let (_, passkeyID) = try await steps.enroll(client, token: token, origin: "https://ios.acme.test")
            let list = try await H.call(client, .get, "/admin/api/realms/dev/users/ada@example.com/passkeys", "", headers: admin)
            XCTAssertEqual(list.status, .ok)
            XCTAssertTrue(list.body.contains(passkeyID) && list.body.contains("ios.acme.test"), list.body)
            let change = try await H.call(client, .patch, "/admin/api/realms/dev/clients/ios", #"{"RpId":"new.acme.test"}"#, headers: admin)
            XCTAssertEqual(change.status, .ok, change.body)
            let warning = try XCTUnwrap(change.json["Warning"] as? String)
            XCTAssertTrue(warning.contains("1 passkey(s) enrolled under ios.acme.test"), warning)
            let revoked = try await H.call(client, .delete, "/admin/api/realms/dev/users/ada@example.com/passkeys/\(passkeyID)", "", headers: admin)
            XCTAssertEqual(revoked.status, .noContent)
            let again = try await H.call(client, .delete, "/admin/api/realms/dev/users/ada@example.com/passkeys/\(passkeyID)", "", headers: admin)
            XCTAssertEqual(again.status, .notFound)
            let mine = try await H.call(client, .get, "/connect/passkey", "", headers: PasskeySteps.bearer(token))
            XCTAssertEqual(mine.body, "[]")
        }
    }
}
