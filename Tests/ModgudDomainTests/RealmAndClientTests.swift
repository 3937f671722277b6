import EventSourcing
import Foundation
import ModgudDomain
import XCTest

func XCTAssertRefused(_ code: String, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) {
    do {
        try body()
        XCTFail("expected \(code)", file: file, line: line)
    } catch let error as DomainError {
        XCTAssertEqual(error.code, code, error.message, file: file, line: line)
    } catch {
        XCTFail("unexpected \(error)", file: file, line: line)
    }
}

let now = Date(timeIntervalSince1970: 1_800_000_000)

final class RealmTests: XCTestCase {
    let settings = RealmSettings(hosts: ["login.example.com"], displayName: "Example", primaryDomain: "example.com")

    func testCreateThenChangeThenRotate() throws {
        var state = Realm.initialState
        let created = try Realm.decide(.create(id: "demo", settings: settings), state: state, now: now)
        state = created.reduce(state, Realm.evolve)
        XCTAssertEqual(state.id, "demo")
        XCTAssertFalse(state.settings!.nativeGrants.enabled, "native grants are off by default")
        XCTAssertEqual(state.settings!.nativeGrants.accessTokenLifetimeMinutes, 15)
        XCTAssertEqual(state.settings!.nativeGrants.refreshTokenLifetimeDays, 14)
        XCTAssertNil(state.settings!.chosenRegistrationPosture)
        XCTAssertEqual(state.settings!.registrationPosture, .jitOnOtp, "no posture chosen: seed 001's default for an app's sign-ins (issue 41)")

        var changed = settings
        changed.nativeGrants.enabled = true
        state = try Realm.decide(.changeSettings(changed), state: state, now: now).reduce(state, Realm.evolve)
        XCTAssertTrue(state.settings!.nativeGrants.enabled)
        XCTAssertEqual(try Realm.decide(.changeSettings(changed), state: state, now: now), [], "no change, no event")

        for kid in ["k1", "k2"] {
            state = try Realm.decide(.rotateSigningKey(kid: kid, algorithm: "ES256", publicJWK: "{}"), state: state, now: now)
                .reduce(state, Realm.evolve)
        }
        XCTAssertEqual(state.signingKeys.map(\.kid), ["k1", "k2"], "old keys stay for verification")
        XCTAssertEqual(state.activeKey?.kid, "k2")
        XCTAssertRefused("SigningKey.DuplicateKid") {
            _ = try Realm.decide(.rotateSigningKey(kid: "k1", algorithm: "ES256", publicJWK: "{}"), state: state, now: now)
        }
        XCTAssertRefused("Realm.AlreadyExists") { _ = try Realm.decide(.create(id: "demo", settings: settings), state: state, now: now) }
    }

    func testLifetimesOutsideTheirRangeAreNamedErrors() {
        for minutes in [0, 61, -5] {
            var bad = settings
            bad.nativeGrants.accessTokenLifetimeMinutes = minutes
            XCTAssertRefused("NativeGrants.InvalidAccessTokenLifetime") {
                _ = try Realm.decide(.create(id: "r", settings: bad), state: Realm.initialState, now: now)
            }
        }
        for days in [0, 31] {
            var bad = settings
            bad.nativeGrants.refreshTokenLifetimeDays = days
            XCTAssertRefused("NativeGrants.InvalidRefreshTokenLifetime") {
                _ = try Realm.decide(.create(id: "r", settings: bad), state: Realm.initialState, now: now)
            }
        }
        var edges = settings
        edges.nativeGrants = NativeGrantSettings(enabled: true, accessTokenLifetimeMinutes: 60, refreshTokenLifetimeDays: 1)
        XCTAssertNoThrow(try Realm.decide(.create(id: "r", settings: edges), state: Realm.initialState, now: now))
    }

    func testHostsAndIdsAreChecked() {
        let cases: [(RealmSettings, String)] = [
            (RealmSettings(hosts: [], displayName: "x"), "Realm.HostsRequired"),
            (RealmSettings(hosts: ["https://a.com"], displayName: "x"), "Realm.InvalidHost"),
            (RealmSettings(hosts: ["A.com"], displayName: "x"), "Realm.InvalidHost"),
            (RealmSettings(hosts: ["a.com", "a.com"], displayName: "x"), "Realm.DuplicateHost"),
            (RealmSettings(hosts: ["a.com"], displayName: " "), "Realm.InvalidDisplayName"),
            (RealmSettings(hosts: ["a.com"], displayName: "x", publicBaseURL: "http://a.com"), "Realm.InvalidPublicBaseURL"),
            (RealmSettings(hosts: ["a.com"], displayName: "x", connections: ["has space"]), "Realm.InvalidConnection"),
            (RealmSettings(hosts: ["a.com"], displayName: "x", connections: [""]), "Realm.InvalidConnection"),
            (RealmSettings(hosts: ["a.com"], displayName: "x", connections: [String(repeating: "c", count: 129)]), "Realm.InvalidConnection"),
        ]
        for (bad, code) in cases {
            XCTAssertRefused(code) { _ = try Realm.decide(.create(id: "r", settings: bad), state: Realm.initialState, now: now) }
        }
        let named = RealmSettings(hosts: ["a.com"], displayName: "x", connections: ["acme-db", "Username_Password.v2"])
        XCTAssertNoThrow(try Realm.decide(.create(id: "r", settings: named), state: Realm.initialState, now: now))
        XCTAssertRefused("Realm.InvalidID") { _ = try Realm.decide(.create(id: "Bad Id", settings: settings), state: Realm.initialState, now: now) }
        XCTAssertRefused("Realm.NotFound") { _ = try Realm.decide(.changeSettings(settings), state: Realm.initialState, now: now) }
    }
}

final class ClientTests: XCTestCase {
    let native = ClientSettings(type: .public, grants: [.otp, .passkey, .refreshToken], allowedScopes: ["openid", "offline_access"])

    func testStrictGrantSeparationAndSecrets() {
        var mixed = native
        mixed.grants.insert(.clientCredentials)
        XCTAssertRefused("Client.MixedGrants") {
            _ = try Client.decide(.register(id: "app", settings: mixed, secretHash: nil), state: Client.initialState, now: now)
        }
        let service = ClientSettings(type: .public, grants: [.clientCredentials], allowedScopes: ["api"])
        XCTAssertRefused("Client.PublicServiceClient") {
            _ = try Client.decide(.register(id: "svc", settings: service, secretHash: nil), state: Client.initialState, now: now)
        }
        var confidential = service
        confidential.type = .confidential
        XCTAssertRefused("Client.SecretRequired") {
            _ = try Client.decide(.register(id: "svc", settings: confidential, secretHash: nil), state: Client.initialState, now: now)
        }
        XCTAssertNoThrow(try Client.decide(.register(id: "svc", settings: confidential, secretHash: "h"), state: Client.initialState, now: now))
        XCTAssertRefused("Client.PublicSecret") {
            _ = try Client.decide(.register(id: "app", settings: native, secretHash: "h"), state: Client.initialState, now: now)
        }
        var refreshOnly = native
        refreshOnly.grants = [.refreshToken]
        XCTAssertRefused("Client.RefreshOnly") {
            _ = try Client.decide(.register(id: "app", settings: refreshOnly, secretHash: nil), state: Client.initialState, now: now)
        }
    }

    func testUpdateRecordsThePreviousRPIDAndRefusesATypeChange() throws {
        var settings = native
        settings.rpID = "old.example.com"
        var state = try Client.decide(.register(id: "app", settings: settings, secretHash: nil), state: Client.initialState, now: now)
            .reduce(Client.initialState, Client.evolve)
        var moved = settings
        moved.rpID = "new.example.com"
        let events = try Client.decide(.update(moved), state: state, now: now)
        XCTAssertEqual(events, [.updated(ClientUpdated(settings: moved, previousRPID: "old.example.com"))])
        state = events.reduce(state, Client.evolve)
        var retyped = moved
        retyped.type = .confidential
        XCTAssertRefused("Client.TypeChange") { _ = try Client.decide(.update(retyped), state: state, now: now) }
        var badOrigin = moved
        badOrigin.androidOrigins = ["https://not-android"]
        XCTAssertRefused("Client.InvalidAndroidOrigin") { _ = try Client.decide(.update(badOrigin), state: state, now: now) }
    }

    func testSettingsEncodeSetsInSortedOrder() throws {
        let settings = ClientSettings(
            type: .public, grants: [.passkey, .otp, .refreshToken, .magic], allowedScopes: ["profile", "email", "openid"],
            audiences: ["b", "a"], androidOrigins: ["android:apk-key-hash:z", "android:apk-key-hash:a"])
        let text = String(decoding: try EventJSON.encode(settings), as: UTF8.self)
        XCTAssertTrue(text.contains(#""allowedScopes":["email","openid","profile"]"#), text)
        XCTAssertTrue(text.contains(#""grants":["refresh_token","urn:cocoar:magic","urn:cocoar:otp","urn:cocoar:passkey"]"#), text)
        XCTAssertEqual(try EventJSON.decode(ClientSettings.self, from: Array(text.utf8)), settings)
    }

    /// Issue 14: `passkeySignUp` is off in settings recorded before it existed, is written only
    /// when on (older settings keep their bytes), and needs the passkey grant.
    func testPasskeySignUpDefaultsOffAndNeedsThePasskeyGrant() throws {
        let old = #"{"accessTokenFormat":"reference","allowedScopes":["openid"],"androidOrigins":[],"audiences":[],"displayName":"","grants":["urn:cocoar:passkey"],"type":"public"}"#
        let decoded = try EventJSON.decode(ClientSettings.self, from: Array(old.utf8))
        XCTAssertFalse(decoded.passkeySignUp)
        XCTAssertEqual(String(decoding: try EventJSON.encode(decoded), as: UTF8.self), old, "unchanged bytes")
        var on = decoded
        on.passkeySignUp = true
        XCTAssertTrue(String(decoding: try EventJSON.encode(on), as: UTF8.self).contains(#""passkeySignUp":true"#))
        XCTAssertNoThrow(try on.validate())
        on.grants = [.otp, .refreshToken]
        XCTAssertRefused("Client.SignUpNeedsPasskeyGrant") { try on.validate() }
    }

    func testDisableAndEnableAreIdempotent() throws {
        var state = try Client.decide(.register(id: "app", settings: native, secretHash: nil), state: Client.initialState, now: now)
            .reduce(Client.initialState, Client.evolve)
        state = try Client.decide(.disable, state: state, now: now).reduce(state, Client.evolve)
        XCTAssertFalse(state.enabled)
        XCTAssertEqual(try Client.decide(.disable, state: state, now: now), [])
        state = try Client.decide(.enable, state: state, now: now).reduce(state, Client.evolve)
        XCTAssertTrue(state.enabled)
    }

    /// Issue 47: Play Integrity keys belong to one of the client's Android apps; setting the same
    /// keys twice and removing keys never set decide nothing.
    func testPlayIntegrityKeysNeedTheClientsAndroidApp() throws {
        let now = Date()
        let settings = ClientSettings(
            type: .public, grants: [.otp], allowedScopes: ["openid"], androidApps: [AndroidApp(packageName: "org.app.one", sha256Fingerprints: [String(repeating: "AB", count: 32)])])
        let registered = try Client.decide(.register(id: "app", settings: settings, secretHash: nil), state: Client.initialState, now: now)
        let state = registered.reduce(Client.initialState, Client.evolve)
        let keys = PlayIntegrityKeys(sealedDecryptionKey: "sealed", verificationKey: "public")
        XCTAssertThrowsError(try Client.decide(.setPlayIntegrityKeys(packageName: "org.app.two", keys: keys), state: state, now: now)) { error in
            XCTAssertEqual((error as? DomainError)?.code, "Client.UnknownAndroidPackage")
        }
        let set = try Client.decide(.setPlayIntegrityKeys(packageName: "org.app.one", keys: keys), state: state, now: now)
        XCTAssertEqual(set.count, 1)
        let withKeys = set.reduce(state, Client.evolve)
        XCTAssertEqual(withKeys.playIntegrity["org.app.one"], keys)
        XCTAssertEqual(try Client.decide(.setPlayIntegrityKeys(packageName: "org.app.one", keys: keys), state: withKeys, now: now), [])
        let removed = try Client.decide(.removePlayIntegrityKeys(packageName: "org.app.one"), state: withKeys, now: now)
        XCTAssertEqual(removed.reduce(withKeys, Client.evolve).playIntegrity, [:])
        XCTAssertEqual(try Client.decide(.removePlayIntegrityKeys(packageName: "org.app.one"), state: state, now: now), [])
    }
}

final class SourceCIDRTests: XCTestCase {
    func testRangesMatchTheRateLimitersSourceKeys() {
        let v4 = SourceCIDR("10.0.0.0/8")!
        XCTAssertTrue(v4.contains(sourceKey: "10.255.1.2"))
        XCTAssertFalse(v4.contains(sourceKey: "11.0.0.1"))
        XCTAssertFalse(v4.contains(sourceKey: "2001:db8::/64"), "families never mix")
        let v6 = SourceCIDR("2001:db8::/32")!
        XCTAssertTrue(v6.contains(sourceKey: "2001:db8:1:2::/64"), "an IPv6 source key is its /64 network")
        XCTAssertFalse(v6.contains(sourceKey: "2001:db9::/64"))
        XCTAssertTrue(SourceCIDR("192.0.2.7")!.contains(sourceKey: "192.0.2.7"), "one address is a /32")
        XCTAssertFalse(SourceCIDR("192.0.2.7")!.contains(sourceKey: "192.0.2.8"))
        XCTAssertTrue(SourceCIDR("0.0.0.0/0")!.contains(sourceKey: "8.8.8.8"))
        XCTAssertEqual(SourceCIDR("10.1.0.0/16")?.description, "10.1.0.0/16")
        for invalid in ["10.0.0.0/33", "2001:db8::/129", "not-an-address", "10.0.0/8", "", "10.0.0.0/-1"] {
            XCTAssertNil(SourceCIDR(invalid), invalid)
        }
    }

    /// Issue 41: a posture is recorded only when chosen; realms recorded before kept theirs.
    func testThePostureDefaultsToJitOnOtpAndARecordedOneIsKept() throws {
        let fresh = RealmSettings(hosts: ["a.com"], displayName: "x")
        let encoded = String(decoding: try JSONEncoder().encode(fresh), as: UTF8.self)
        XCTAssertFalse(encoded.contains("registrationPosture"), encoded)
        var recorded = try JSONSerialization.jsonObject(with: Data(encoded.utf8)) as! [String: Any]
        recorded["registrationPosture"] = "Off"
        let legacy = try JSONDecoder().decode(RealmSettings.self, from: JSONSerialization.data(withJSONObject: recorded))
        XCTAssertEqual(legacy.registrationPosture, .off, "a realm recorded with Off keeps it")
        var chosen = fresh
        chosen.registrationPosture = .explicitEndpoint
        XCTAssertEqual(try JSONDecoder().decode(RealmSettings.self, from: JSONEncoder().encode(chosen)).chosenRegistrationPosture, .explicitEndpoint)
    }

    /// Issue 41: a key is retired only once rotated out and an hour later, unless forced.
    func testRetiringAKeyNeedsItRotatedOutAndTheOverlapPassed() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let settings = RealmSettings(hosts: ["a.test"], displayName: "A")
        var state = try Realm.decide(.create(id: "demo", settings: settings), state: Realm.initialState, now: now).reduce(Realm.initialState, Realm.evolve)
        state = try Realm.decide(.rotateSigningKey(kid: "k1", algorithm: "ES256", publicJWK: "{}"), state: state, now: now).reduce(state, Realm.evolve)
        XCTAssertThrowsError(try Realm.decide(.retireSigningKey(kid: "k1", force: true), state: state, now: now)) {
            XCTAssertEqual(($0 as? DomainError)?.code, "SigningKey.Active")
        }
        let rotatedAt = now.addingTimeInterval(600)
        state = try Realm.decide(.rotateSigningKey(kid: "k2", algorithm: "RS256", publicJWK: "{}"), state: state, now: rotatedAt)
            .reduce(state, Realm.evolve)
        XCTAssertThrowsError(try Realm.decide(.retireSigningKey(kid: "k1", force: false), state: state, now: rotatedAt.addingTimeInterval(3599))) {
            XCTAssertEqual(($0 as? DomainError)?.code, "SigningKey.InOverlap")
        }
        XCTAssertThrowsError(try Realm.decide(.retireSigningKey(kid: "k9", force: true), state: state, now: rotatedAt)) {
            XCTAssertEqual(($0 as? DomainError)?.code, "SigningKey.NotFound")
        }
        let due = try Realm.decide(.retireSigningKey(kid: "k1", force: false), state: state, now: rotatedAt.addingTimeInterval(3600))
        XCTAssertEqual(due, [RealmEvent.signingKeyRetired(SigningKeyRetired(kid: "k1", retiredAt: rotatedAt.addingTimeInterval(3600), forced: false))])
        let forced = try Realm.decide(.retireSigningKey(kid: "k1", force: true), state: state, now: rotatedAt)
        XCTAssertEqual(forced, [RealmEvent.signingKeyRetired(SigningKeyRetired(kid: "k1", retiredAt: rotatedAt, forced: true))])
        state = forced.reduce(state, Realm.evolve)
        XCTAssertEqual(state.publishedKeys.map { $0.kid }, ["k2"])
        XCTAssertEqual(try Realm.decide(.retireSigningKey(kid: "k1", force: true), state: state, now: rotatedAt), [], "retired already: nothing")
    }

    func testAnInvalidAllowlistIsRefusedByName() {
        var settings = RealmSettings(hosts: ["a.test"], displayName: "A")
        settings.rateLimitOverrides["token.ip"] = RateLimitSetting(limit: 1, windowSeconds: 60, burst: 1, allowlist: ["10.0.0.0/40"])
        XCTAssertThrowsError(try settings.validate()) { error in
            XCTAssertEqual((error as? DomainError)?.code, "RateLimit.InvalidAllowlist")
        }
    }
}

/// Issue 25, item 3: magic links follow the seed (on with native grants and the client's grant)
/// unless a realm turned them off; realms recorded before keep their Bool.
final class MagicLinkSwitchTests: XCTestCase {
    func testUnsetIsOnAnExplicitValueIsKeptAndOnlyASetValueIsEncoded() throws {
        let fresh = RealmSettings(hosts: ["a.com"], displayName: "x")
        XCTAssertNil(fresh.magicLinkEnabled)
        XCTAssertTrue(fresh.magicLinksOn)
        let encoded = String(decoding: try JSONEncoder().encode(fresh), as: UTF8.self)
        XCTAssertFalse(encoded.contains("magicLinkEnabled"), encoded)
        var off = fresh
        off.magicLinkEnabled = false
        let decodedOff = try JSONDecoder().decode(RealmSettings.self, from: try JSONEncoder().encode(off))
        XCTAssertEqual(decodedOff.magicLinkEnabled, false)
        XCTAssertFalse(decodedOff.magicLinksOn)
        // A realm recorded before issue 25 (the Bool always present) keeps what it recorded.
        let legacy = #"{"hosts":["a.com"],"displayName":"x","nativeGrants":{"enabled":true,"accessTokenLifetimeMinutes":15,"refreshTokenLifetimeDays":14},"registrationPosture":"Off","registrationFields":{"username":"Off","firstname":"Off","lastname":"Off"},"magicLinkEnabled":false,"rateLimitOverrides":{}}"#
        let decoded = try JSONDecoder().decode(RealmSettings.self, from: Data(legacy.utf8))
        XCTAssertEqual(decoded.magicLinkEnabled, false)
    }

}
