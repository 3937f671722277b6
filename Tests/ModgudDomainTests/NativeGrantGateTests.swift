import Foundation
import ModgudDomain
import XCTest

/// Issue 65: the realm flag gates giving native grants (item 7), and a client's optional app
/// URL scheme for `/magic-login` (item 6).
final class NativeGrantGateTests: XCTestCase {
    func testOnlyANewNativeGrantIsRefusedWhileTheFlagIsOff() throws {
        var realm = RealmSettings(hosts: ["a.test"], displayName: "A")
        XCTAssertRefused("Client.NativeGrantsDisabled") { try NativeGrantGate.check(before: [], after: [.otp, .refreshToken], realm: realm) }
        XCTAssertRefused("Client.NativeGrantsDisabled") { try NativeGrantGate.check(before: [.otp], after: [.otp, .magic], realm: realm) }
        try NativeGrantGate.check(before: [.otp, .magic], after: [.otp, .refreshToken], realm: realm)
        try NativeGrantGate.check(before: [], after: [.clientCredentials], realm: realm)
        let client = ClientSettings(type: .public, grants: [.passkey, .otp, .refreshToken], allowedScopes: [])
        XCTAssertEqual(NativeGrantGate.inert(client, realm: realm), [.otp, .passkey])
        realm.nativeGrants.enabled = true
        try NativeGrantGate.check(before: [], after: GrantType.native, realm: realm)
        XCTAssertEqual(NativeGrantGate.inert(client, realm: realm), [])
    }

    func testTheAppURLSchemeIsAnRFC3986SchemeNotTheWebsAndOptionalInOldSettings() throws {
        for scheme in ["acme-app", "com.acme.app", "a+b", "A1"] { XCTAssertTrue(ClientSettings.isAppURLScheme(scheme), scheme) }
        for scheme in ["", "1app", "-app", "http", "HTTPS", "acme app", "acme:app", "acme_app", "émoji", String(repeating: "a", count: 65)] {
            XCTAssertFalse(ClientSettings.isAppURLScheme(scheme), scheme)
        }
        var settings = ClientSettings(type: .public, grants: [.magic], allowedScopes: [])
        settings.appURLScheme = "https"
        XCTAssertRefused("Client.InvalidAppUrlScheme") { try settings.validate() }
        let recorded = #"{"type":"public","grants":["urn:cocoar:magic"],"allowedScopes":[]}"#
        let decoded = try JSONDecoder().decode(ClientSettings.self, from: Data(recorded.utf8))
        XCTAssertNil(decoded.appURLScheme)
        XCTAssertFalse(String(decoding: try JSONEncoder().encode(decoded), as: UTF8.self).contains("appURLScheme"), "unset: not written")
        var scheme = decoded
        scheme.appURLScheme = "acme-app"
        XCTAssertEqual(try JSONDecoder().decode(ClientSettings.self, from: try JSONEncoder().encode(scheme)).appURLScheme, "acme-app")
    }
}
