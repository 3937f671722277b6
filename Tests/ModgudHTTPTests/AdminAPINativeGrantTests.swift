import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 65, build item 7: the native grants cannot be given to a client while the realm's
/// flag is off. The admin API refuses with a problem naming the realm setting; grants a client
/// already holds stay (inert) while its other settings change.
final class AdminAPINativeGrantTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!
    static let admin: HTTPFields = [.authorization: "Bearer \(EmailSignInHarness.adminToken)", .contentType: "application/json"]

    override func tearDown() async throws {
        await harness?.close()
    }

    func testNativeGrantsAreRefusedWhileTheRealmFlagIsOffAndHeldOnesStay() async throws {
        // The harness gives `app` urn:cocoar:otp and urn:cocoar:magic, then turns the flag off.
        harness = try await EmailSignInHarness(settings: { $0.nativeGrants.enabled = false })
        let harness = harness!
        try await harness.app.test(.router) { client in
            func refused(_ reply: H.Reply, _ grant: String, file: StaticString = #filePath, line: UInt = #line) {
                XCTAssertEqual(reply.status, .badRequest, reply.body, file: file, line: line)
                XCTAssertEqual(reply.headers[.contentType], "application/problem+json", file: file, line: line)
                XCTAssertEqual(reply.json["title"] as? String, "Client.NativeGrantsDisabled", reply.body, file: file, line: line)
                let detail = reply.json["detail"] as? String ?? ""
                for named in [grant, "NativeGrants.Enabled", "--native-grants true", #"{"NativeGrants":{"Enabled":true}}"#] {
                    XCTAssertTrue(detail.contains(named), "\(named) in \(detail)", file: file, line: line)
                }
            }
            let created = try await H.call(
                client, .post, "/admin/api/realms/dev/clients", #"{"Id":"ios","Type":"public","Grants":["urn:cocoar:otp","refresh_token"],"Scopes":["openid"]}"#,
                headers: Self.admin)
            refused(created, "urn:cocoar:otp")
            let missing = try await H.call(client, .get, "/admin/api/realms/dev/clients/ios", "", headers: Self.admin)
            XCTAssertEqual(missing.status, .notFound, "nothing was created")

            let gained = try await H.call(
                client, .patch, "/admin/api/realms/dev/clients/app", #"{"Grants":["urn:cocoar:otp","urn:cocoar:magic","urn:cocoar:passkey","refresh_token"]}"#,
                headers: Self.admin)
            refused(gained, "urn:cocoar:passkey")

            // Held grants are inert, not in the way: the client's scopes change, and so does a
            // grant list that only keeps or drops native grants.
            let scopes = try await H.call(client, .patch, "/admin/api/realms/dev/clients/app", #"{"Scopes":["openid","email"]}"#, headers: Self.admin)
            XCTAssertEqual(scopes.status, .ok, scopes.body)
            XCTAssertEqual((scopes.json["Client"] as? [String: Any])?["Grants"] as? [String], ["refresh_token", "urn:cocoar:magic", "urn:cocoar:otp"])
            let dropped = try await H.call(
                client, .patch, "/admin/api/realms/dev/clients/app", #"{"Grants":["urn:cocoar:otp","refresh_token"]}"#, headers: Self.admin)
            XCTAssertEqual(dropped.status, .ok, dropped.body)
            let inert = try await harness.core.administration.clients.inertNativeGrants(realm: "dev")
            XCTAssertEqual(inert.map(\.id), ["app", "conf", "plain"])

            // The flag on: the same request succeeds.
            let on = try await H.call(client, .patch, "/admin/api/realms/dev", #"{"NativeGrants":{"Enabled":true}}"#, headers: Self.admin)
            XCTAssertEqual(on.status, .ok, on.body)
            let again = try await H.call(
                client, .post, "/admin/api/realms/dev/clients", #"{"Id":"ios","Type":"public","Grants":["urn:cocoar:otp","refresh_token"],"Scopes":["openid"]}"#,
                headers: Self.admin)
            XCTAssertEqual(again.status, .created, again.body)
            let none = try await harness.core.administration.clients.inertNativeGrants(realm: "dev")
            XCTAssertTrue(none.isEmpty)
        }
    }
}
