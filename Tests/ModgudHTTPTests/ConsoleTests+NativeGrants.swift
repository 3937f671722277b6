import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 65, build item 7: the console offers the native grants only while the realm's flag is
/// on ("They only appear in the grant picker once the realm flag in step 1 is on"), says how to
/// turn it on, and keeps a client's held native grants (inert) when its form is saved.
extension ConsoleTests {
    func testTheGrantPickerLeavesOutTheNativeGrantsWhileTheRealmFlagIsOff() async throws {
        let app = try await start()
        let harness = harness!
        let admin = harness.core.administration
        _ = try await admin.realms.update("dev", metadata: .init()) { $0.nativeGrants.enabled = false }
        let native = ["urn:cocoar:otp", "urn:cocoar:magic", "urn:cocoar:passkey"]
        let note = "The native grants (urn:cocoar:otp, urn:cocoar:magic, urn:cocoar:passkey) appear here once the realm's native grants are on"
        try await app.test(.router) { client in
            let session = try await Self.session(client, harness)
            let new = try await H.call(client, .get, "/console/realms/dev/clients/new", "", headers: session.headers)
            XCTAssertEqual(new.status, .ok)
            for grant in native { XCTAssertFalse(new.body.contains(#"name="grant_\#(grant)""#), "\(grant) offered:\n\(new.body)") }
            XCTAssertTrue(new.body.contains(#"name="grant_refresh_token" value="on">"#), "offered, and not ticked by default")
            XCTAssertTrue(new.body.contains(note) && new.body.contains(#"<a href="/console/realms/dev">the realm's page</a>"#), new.body)

            let shown = try await H.call(client, .get, "/console/realms/dev/clients/app", "", headers: session.headers)
            for grant in native { XCTAssertFalse(shown.body.contains(#"name="grant_\#(grant)""#), grant) }
            XCTAssertTrue(shown.body.contains("This client holds urn:cocoar:magic, urn:cocoar:otp: inert until then."), shown.body)

            // Saving the form keeps what the client holds; a native grant posted anyway is not taken.
            let form = "_csrf=\(session.csrf)&display_name=App&grant_refresh_token=on&grant_urn%3Acocoar%3Apasskey=on&scopes=openid%20email"
            let saved = try await H.call(client, .post, "/console/realms/dev/clients/app", form, headers: session.headers)
            XCTAssertLessThan(saved.status.code, 400, saved.body)
            let settings = try await admin.clients.get(realm: "dev", id: "app").settings
            XCTAssertEqual(settings?.grants, [.otp, .magic, .refreshToken])
            XCTAssertEqual(settings?.allowedScopes, ["openid", "email"])

            _ = try await admin.realms.update("dev", metadata: .init()) { $0.nativeGrants.enabled = true }
            let on = try await H.call(client, .get, "/console/realms/dev/clients/new", "", headers: session.headers)
            for grant in native { XCTAssertTrue(on.body.contains(#"name="grant_\#(grant)" value="on" checked>"#), "\(grant) offered and ticked") }
            XCTAssertFalse(on.body.contains(note))
        }
    }
}
