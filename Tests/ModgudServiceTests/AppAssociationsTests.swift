import Foundation
import ModgudDomain
@testable import ModgudService
import XCTest

/// Issue 15: the app-association files and the Android origins derived from signing
/// certificates. The expected key hashes were computed apart from this code (Python's
/// `base64.urlsafe_b64encode(bytes.fromhex(fp)).rstrip("=")`).
final class AppAssociationsTests: XCTestCase {
    static let pairs = [
        ("14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5", "FG3pg8VzBlDY7rmVLzT8ZBagg0LmHb6oigSWsj_PROU"),
        ("FA:C6:17:45:DC:09:03:78:6F:B9:ED:E6:2A:96:2B:39:9F:73:48:F0:BB:6F:89:9B:83:32:66:75:91:03:3B:9C", "-sYXRdwJA3hvue3mKpYrOZ9zSPC7b4mbgzJmdZEDO5w"),
    ]

    func testAndroidOriginsAreTheFingerprintsInUnpaddedBase64URL() {
        for (fingerprint, hash) in Self.pairs {
            XCTAssertEqual(AndroidApp.origin(fingerprint: fingerprint), "android:apk-key-hash:" + hash)
            XCTAssertEqual(AndroidApp.origin(fingerprint: fingerprint.lowercased().replacingOccurrences(of: ":", with: "")), "android:apk-key-hash:" + hash)
        }
        let app = AndroidApp(packageName: "com.acme.app", sha256Fingerprints: [Self.pairs[0].0.lowercased().replacingOccurrences(of: ":", with: "")])
        XCTAssertEqual(app.sha256Fingerprints, [Self.pairs[0].0], "kept as assetlinks.json writes them")
        var settings = ClientSettings(type: .public, grants: [.passkey], allowedScopes: [], androidOrigins: ["android:apk-key-hash:manual"])
        settings.androidApps = [app, AndroidApp(packageName: "com.acme.beta", sha256Fingerprints: [Self.pairs[1].0])]
        XCTAssertEqual(
            settings.acceptedAndroidOrigins,
            ["android:apk-key-hash:manual", "android:apk-key-hash:" + Self.pairs[0].1, "android:apk-key-hash:" + Self.pairs[1].1])
        XCTAssertNil(AndroidApp.origin(fingerprint: "AB:CD"))
        XCTAssertNil(AndroidApp.origin(fingerprint: String(repeating: "ZZ", count: 32)))
    }

    func testInvalidAppSettingsAreNamedErrors() {
        func refused(_ change: (inout ClientSettings) -> Void) -> String? {
            var settings = ClientSettings(type: .public, grants: [.passkey], allowedScopes: [])
            change(&settings)
            do {
                try settings.validate()
                return nil
            } catch { return error.code }
        }
        XCTAssertNil(refused { $0.appleAppIDs = ["ABCDE12345.com.acme.app"] })
        XCTAssertEqual(refused { $0.appleAppIDs = ["com.acme.app"] }, "Client.InvalidAppleAppId")
        XCTAssertEqual(refused { $0.appleAppIDs = ["abcde12345.com.acme.app"] }, "Client.InvalidAppleAppId", "team ids are upper case")
        XCTAssertEqual(refused { $0.appleAppIDs = ["ABCDE1234.com.acme.app"] }, "Client.InvalidAppleAppId", "ten characters")
        XCTAssertEqual(refused { $0.androidApps = [AndroidApp(packageName: "acme", sha256Fingerprints: [Self.pairs[0].0])] }, "Client.InvalidAndroidPackage")
        XCTAssertEqual(refused { $0.androidApps = [AndroidApp(packageName: "com.1acme", sha256Fingerprints: [Self.pairs[0].0])] }, "Client.InvalidAndroidPackage")
        XCTAssertEqual(refused { $0.androidApps = [AndroidApp(packageName: "com.acme", sha256Fingerprints: [])] }, "Client.InvalidAndroidFingerprint")
        XCTAssertEqual(refused { $0.androidApps = [AndroidApp(packageName: "com.acme", sha256Fingerprints: ["AB:CD"])] }, "Client.InvalidAndroidFingerprint")
    }

    /// Apple: `{"webcredentials": {"apps": ["TEAMID.bundle.id", …]}}` (Supporting associated
    /// domains). Google: a statement list, each `relation` and a `target` with `namespace`
    /// `android_app`, `package_name`, `sha256_cert_fingerprints` (Digital Asset Links).
    func testTheFilesHaveTheDocumentedStructure() throws {
        let aasa = try JSONSerialization.jsonObject(
            with: Data(AppAssociations.appleAppSiteAssociation(appIDs: ["ABCDE12345.com.acme.app", "ZYXWV98765.com.acme.app", "ABCDE12345.com.acme.app"])))
        XCTAssertEqual(aasa as? [String: [String: [String]]], ["webcredentials": ["apps": ["ABCDE12345.com.acme.app", "ZYXWV98765.com.acme.app"]]])

        let links = try XCTUnwrap(
            try JSONSerialization.jsonObject(
                with: Data(
                    AppAssociations.assetLinks(apps: [
                        AndroidApp(packageName: "com.acme.app", sha256Fingerprints: [Self.pairs[0].0]),
                        AndroidApp(packageName: "com.acme.app", sha256Fingerprints: [Self.pairs[1].0]),
                        AndroidApp(packageName: "com.acme.beta", sha256Fingerprints: [Self.pairs[1].0]),
                    ]))) as? [[String: Any]])
        XCTAssertEqual(links.count, 2, "one statement per package")
        for statement in links {
            XCTAssertEqual(Set(statement.keys), ["relation", "target"])
            XCTAssertEqual(statement["relation"] as? [String], ["delegate_permission/common.get_login_creds"], "passkey apps only: no link claim")
            let target = try XCTUnwrap(statement["target"] as? [String: Any])
            XCTAssertEqual(Set(target.keys), ["namespace", "package_name", "sha256_cert_fingerprints"])
            XCTAssertEqual(target["namespace"] as? String, "android_app")
            for fingerprint in target["sha256_cert_fingerprints"] as? [String] ?? [] {
                XCTAssertNotNil(fingerprint.wholeMatch(of: /([0-9A-F]{2}:){31}[0-9A-F]{2}/), fingerprint)
            }
        }
        XCTAssertEqual((links[0]["target"] as? [String: Any])?["package_name"] as? String, "com.acme.app")
        XCTAssertEqual((links[0]["target"] as? [String: Any])?["sha256_cert_fingerprints"] as? [String], [Self.pairs[0].0, Self.pairs[1].0].sorted())
    }

    /// Issue 25: a host's roles decide each app's relations and Apple's services.
    func testLinkAppsGetApplinksAndHandleAllURLsAndPasskeyAppsWebcredentials() throws {
        let both = AndroidApp(packageName: "com.acme.app", sha256Fingerprints: [Self.pairs[0].0])
        let linksOnly = AndroidApp(packageName: "com.acme.links", sha256Fingerprints: [Self.pairs[1].0])
        let apps = AppAssociations.HostApps(
            passkeyApple: ["ABCDE12345.com.acme.app"], linkApple: ["ABCDE12345.com.acme.app", "ABCDE12345.com.acme.links"],
            passkeyAndroid: [both], linkAndroid: [both, linksOnly])
        let aasa = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(AppAssociations.appleAppSiteAssociation(apps))) as? [String: Any])
        let details = try XCTUnwrap((aasa["applinks"] as? [String: Any])?["details"] as? [[String: Any]])
        XCTAssertEqual(details.count, 1)
        XCTAssertEqual(details[0]["appIDs"] as? [String], ["ABCDE12345.com.acme.app", "ABCDE12345.com.acme.links"])
        XCTAssertEqual((details[0]["components"] as? [[String: String]])?.map { $0["/"] }, ["/magic-login"], "the magic links and nothing else of the host")
        XCTAssertNil(details[0]["paths"], "Apple's current format, not the legacy paths")
        XCTAssertEqual((aasa["webcredentials"] as? [String: [String]])?["apps"], ["ABCDE12345.com.acme.app"])

        let links = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(AppAssociations.assetLinks(apps))) as? [[String: Any]])
        let relations = Dictionary(
            uniqueKeysWithValues: links.map { (($0["target"] as? [String: Any])?["package_name"] as? String ?? "", $0["relation"] as? [String] ?? []) })
        XCTAssertEqual(relations["com.acme.app"], ["delegate_permission/common.get_login_creds", "delegate_permission/common.handle_all_urls"])
        XCTAssertEqual(relations["com.acme.links"], ["delegate_permission/common.handle_all_urls"])

        var settings = RealmSettings(hosts: ["login.acme.test", "id.acme.test"], displayName: "Acme")
        XCTAssertNil(AppAssociations.linkHost(settings), "no PublicBaseURL: the request's own host")
        settings.publicBaseURL = "https://Login.Acme.test/base"
        XCTAssertEqual(AppAssociations.linkHost(settings), "login.acme.test")
    }
}
