import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 15, item 1: a realm host that is its apps' RP-ID serves their association files, and
/// the Android origins derived from the signing certificates are accepted.
final class AppAssociationTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!
    /// Fingerprints and their key hashes, computed apart from the code (see the service tests).
    static let pairs = [
        ("14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5", "FG3pg8VzBlDY7rmVLzT8ZBagg0LmHb6oigSWsj_PROU"),
        ("FA:C6:17:45:DC:09:03:78:6F:B9:ED:E6:2A:96:2B:39:9F:73:48:F0:BB:6F:89:9B:83:32:66:75:91:03:3B:9C", "-sYXRdwJA3hvue3mKpYrOZ9zSPC7b4mbgzJmdZEDO5w"),
    ]

    override func tearDown() async throws {
        await harness?.close()
    }

    func testTheRealmHostServesItsAppsFilesAndAcceptsTheDerivedOrigins() async throws {
        let harness = try await EmailSignInHarness(settings: { $0.primaryDomain = "acme.test" })
        self.harness = harness
        let (fingerprint, hash) = Self.pairs[1]
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "android",
            settings: ClientSettings(
                type: .public, grants: [.otp, .passkey, .refreshToken], allowedScopes: ["openid", "offline_access"], rpID: "localhost",
                appleAppIDs: ["ABCDE12345.com.acme.app"], androidApps: [AndroidApp(packageName: "com.acme.app", sha256Fingerprints: [fingerprint])]),
            metadata: .init())
        try await harness.app.test(.router) { client in
            // Served at the realm's host "localhost", which is the client's RP-ID.
            let aasa = try await H.call(client, .get, "/.well-known/apple-app-site-association", "", headers: [:])
            XCTAssertEqual(aasa.status, .ok, aasa.body)
            XCTAssertEqual(aasa.headers[.contentType], "application/json")
            XCTAssertEqual(aasa.json as? [String: [String: [String]]], ["webcredentials": ["apps": ["ABCDE12345.com.acme.app"]]])
            try AppleAssociationSchema.check(aasa.body)
            let links = try await H.call(client, .get, "/.well-known/assetlinks.json", "", headers: [:])
            XCTAssertEqual(links.status, .ok, links.body)
            XCTAssertEqual(links.headers[.contentType], "application/json")
            let statements = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(links.body.utf8)) as? [[String: Any]])
            XCTAssertEqual((statements.first?["target"] as? [String: Any])?["sha256_cert_fingerprints"] as? [String], [fingerprint])

            // The Android app's origin verifies without any manual android:apk-key-hash: entry.
            let steps = PasskeySteps(harness: harness)
            let token = try await steps.signInWithCode(client, "ada@example.com", clientID: "android")
            _ = try await steps.enroll(client, token: token, origin: "android:apk-key-hash:" + hash)
            let begun = try await H.call(client, .post, "/connect/passkey/enroll/begin", "", headers: PasskeySteps.bearer(token))
            let options = try XCTUnwrap(begun.json["options"] as? [String: Any])
            let (_, foreign) = try SignUpSteps.create(
                options: options, authenticator: SoftwareAuthenticator(), origin: "android:apk-key-hash:" + Self.pairs[0].1)
            let refused = try await H.call(
                client, .post, "/connect/passkey/enroll",
                #"{"ceremonyId":"\#(begun.json["ceremonyId"] as! String)","attestation":\#(foreign)}"#, headers: PasskeySteps.bearer(token, json: true))
            XCTAssertEqual(refused.json["title"] as? String, "Passkey.InvalidAttestation", "another certificate's app is not accepted")

            // Without apps under the host's name: 404.
            let disabled = try await H.call(
                client, .patch, "/admin/api/realms/dev/clients/android", #"{"AppleAppIds":[],"AndroidApps":[]}"#,
                headers: [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"])
            XCTAssertEqual(disabled.status, .ok, disabled.body)
            let gone = try await H.call(client, .get, "/.well-known/apple-app-site-association", "", headers: [:])
            XCTAssertEqual(gone.status, .notFound)
            let bad = try await H.call(
                client, .patch, "/admin/api/realms/dev/clients/android", #"{"AndroidApps":[{"PackageName":"com.acme","Sha256CertFingerprints":["AB"]}]}"#,
                headers: [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"])
            XCTAssertEqual(bad.json["title"] as? String, "Client.InvalidAndroidFingerprint", bad.body)
            let unknown = try await H.call(
                client, .patch, "/admin/api/realms/dev/clients/android",
                #"{"AndroidApps":[{"PackageName":"com.acme.app","Sha256CertFingerprints":["\#(fingerprint)"],"Extra":1}]}"#,
                headers: [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"])
            XCTAssertEqual(unknown.status, .badRequest, "unknown members inside an app are refused too")
            let set = try await H.call(
                client, .patch, "/admin/api/realms/dev/clients/android",
                #"{"AndroidApps":[{"PackageName":"com.acme.app","Sha256CertFingerprints":["\#(fingerprint.lowercased())"]}]}"#,
                headers: [.authorization: "Bearer \(H.adminToken)", .contentType: "application/json"])
            let apps = (set.json["Client"] as? [String: Any])?["AndroidApps"] as? [[String: Any]]
            XCTAssertEqual(apps?.first?["Sha256CertFingerprints"] as? [String], [fingerprint], "normalized")
        }
    }
}

extension AppAssociationTests {
    /// Issue 25: the magic-link host serves `applinks` for `/magic-login` to the apps of clients
    /// with `urn:cocoar:magic`, and `handle_all_urls` on Android, whether or not it is an RP-ID.
    func testTheMagicLinkHostServesApplinksForTheAppsThatAcceptLinks() async throws {
        let harness = try await EmailSignInHarness(settings: { $0.publicBaseURL = "https://localhost" })
        self.harness = harness
        let (fingerprint, _) = Self.pairs[0]
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "links",
            settings: ClientSettings(
                type: .public, grants: [.otp, .magic, .refreshToken], allowedScopes: ["openid", "offline_access"], rpID: "ios.acme.test",
                appleAppIDs: ["ABCDE12345.com.acme.app"], androidApps: [AndroidApp(packageName: "com.acme.app", sha256Fingerprints: [fingerprint])]),
            metadata: .init())
        try await harness.app.test(.router) { client in
            let aasa = try await H.call(client, .get, "/.well-known/apple-app-site-association", "", headers: [:])
            XCTAssertEqual(aasa.status, .ok, aasa.body)
            try AppleAssociationSchema.check(aasa.body)
            let details = try XCTUnwrap((aasa.json["applinks"] as? [String: Any])?["details"] as? [[String: Any]])
            XCTAssertEqual(details.first?["appIDs"] as? [String], ["ABCDE12345.com.acme.app"])
            XCTAssertEqual((details.first?["components"] as? [[String: String]])?.first?["/"], "/magic-login")
            XCTAssertNil(aasa.json["webcredentials"], "localhost is not the client's RP-ID")
            let links = try await H.call(client, .get, "/.well-known/assetlinks.json", "", headers: [:])
            let statements = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(links.body.utf8)) as? [[String: Any]])
            XCTAssertEqual(statements.first?["relation"] as? [String], ["delegate_permission/common.handle_all_urls"])
        }
    }
}

/// Apple's apple-app-site-association format (Supporting associated domains; the
/// `applinks.details[].appIDs`/`components` form): each service's members and types, and no
/// legacy `paths` or `appID`. A failed rule throws with its place.
enum AppleAssociationSchema {
    struct Violation: Error, CustomStringConvertible {
        var description: String
    }

    static func check(_ text: String) throws {
        guard let document = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else { throw Violation(description: "not an object") }
        let services: Set<String> = ["applinks", "webcredentials", "appclips", "activitycontinuation"]
        for key in document.keys where !services.contains(key) { throw Violation(description: "unknown service \(key)") }
        if let applinks = document["applinks"] {
            guard let applinks = applinks as? [String: Any], let details = applinks["details"] as? [[String: Any]] else {
                throw Violation(description: "applinks.details must be an array of objects")
            }
            for key in applinks.keys where !["details", "defaults", "substitutionVariables"].contains(key) {
                throw Violation(description: "applinks.\(key) is not in Apple's format (legacy apps/paths?)")
            }
            for detail in details {
                guard let ids = detail["appIDs"] as? [String], !ids.isEmpty, ids.allSatisfy(isAppID) else {
                    throw Violation(description: "details[].appIDs must be TEAMID.bundle.id strings")
                }
                guard let components = detail["components"] as? [[String: Any]], !components.isEmpty else {
                    throw Violation(description: "details[].components must be a non-empty array")
                }
                for key in detail.keys where !["appIDs", "components", "defaults"].contains(key) {
                    throw Violation(description: "details[].\(key) is not in Apple's format")
                }
                for component in components {
                    for (key, value) in component {
                        guard ["/", "?", "#", "exclude", "comment", "caseSensitive", "percentEncoded"].contains(key) else {
                            throw Violation(description: "components[].\(key) is not in Apple's format")
                        }
                        if ["/", "#", "comment"].contains(key), !(value is String) { throw Violation(description: "components[].\(key) must be a string") }
                    }
                }
            }
        }
        if let credentials = document["webcredentials"] {
            guard let apps = (credentials as? [String: Any])?["apps"] as? [String], apps.allSatisfy(isAppID) else {
                throw Violation(description: "webcredentials.apps must be TEAMID.bundle.id strings")
            }
        }
    }

    static func isAppID(_ id: String) -> Bool {
        id.wholeMatch(of: /[A-Z0-9]{10}\.[A-Za-z0-9.\-]+/) != nil
    }
}
