import Foundation
import ModgudSchema
import PQ
import PostgresTestSupport
import XCTest

/// Issue 11: every admin and operator command runs against a real database, checked by its
/// output and exit code, with a bad-input case each.
final class CommandTests: XCTestCase {
    var database: TestDatabase!
    var cli: CLIRunner!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 4)
        cli = CLIRunner(databaseURL: database.url)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    /// A P-256 key in a .p8 file's form, made for this test (not anyone's Apple key).
    static let appleKey = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgOieCrN1wKQaGdres
        IyNtjF3rxh4YCGyOHaWFABg2FBehRANCAAS+KVYnqS/bIqokxMIl9v822QpIoALK
        pZZTH91zv4JDH+O0lP8a1blnLPuOyNqijJgBUzM/rhXCs91q8wMOmUmx
        -----END PRIVATE KEY-----
        """

    func testMigrateIsIdempotentAndReportsAnUnreachableDatabase() throws {
        let again = try cli.ok(["migrate"])
        XCTAssertTrue(again.contains("0 applied, \(ModgudSchema.migrations.count) already applied"), again)
        let unreachable = try CLIRunner(databaseURL: "postgresql://postgres@127.0.0.1:1/none").fails(["migrate"])
        XCTAssertTrue(unreachable.contains("Connection refused") || unreachable.contains("connect"), unreachable)
    }

    func testRealmCommandsConfigureARealmEndToEnd() throws {
        let created = try cli.ok([
            "realm", "create", "acme", "--host", "login.acme.test", "--display-name", "Acme", "--native-grants", "true",
            "--registration", "JitOnOtp", "--registration-field", "Firstname=Required", "--rate-limit", "token.client-source=300/60/100",
            "--rate-limit-log-only", "token.ip=true", "--rate-limit-allow", "token.ip=10.0.0.0/8", "--session-days", "30",
            "--refresh-reuse-grace", "10", "--primary-domain", "acme.test", "--magic-link", "true",
        ])
        for line in [
            "realm        acme", "registration JitOnOtp, magic links on", "sessions     30 d at most, refresh reuse grace 10 s",
            "fields       Email Required, Username Off, Firstname Required, Lastname Optional", "token.client-source  300/60s burst 100 (set)",
            "token.ip             600/60s burst 200 (set, log-only, allow 10.0.0.0/8)", "token.client         60000/60s burst 20000 (default)",
        ] {
            XCTAssertTrue(created.contains(line), "missing \(line) in\n\(created)")
        }
        let key = try cli.ok(["realm", "rotate-key", "acme"])
        XCTAssertTrue(key.contains("new signing key"), key)
        let moved = try cli.ok(["realm", "update", "acme", "--primary-domain", "id.acme.test"])
        XCTAssertTrue(moved.contains("warning: The primary domain changed from acme.test to id.acme.test"), moved)
        let shown = try cli.ok(["realm", "show", "acme"])
        XCTAssertTrue(shown.contains("primary dom. id.acme.test"), shown)
        XCTAssertTrue(shown.contains("connections  acme, email, Username-Password-Authentication\n"), shown)
        _ = try cli.ok(["realm", "update", "acme", "--connection", "acme-db", "--connection", "legacy"])
        XCTAssertTrue(try cli.ok(["realm", "show", "acme"]).contains("connections  acme, email, Username-Password-Authentication, acme-db, legacy\n"))
        XCTAssertTrue(try cli.fails(["realm", "update", "acme", "--connection", "has space"]).contains("Realm.InvalidConnection"))
        let listed = try cli.ok(["realm", "list"])
        XCTAssertEqual(listed, "acme\tnative-grants\tlogin.acme.test\n")

        // Issue 48: identity providers, and an Apple provider's Sign in with Apple key (read from a file, sealed, never printed).
        let apple = try cli.ok(["realm", "provider", "acme", "apple", "--kind", "apple", "--audience", "com.acme.app"])
        XCTAssertTrue(apple.contains("provider     apple (apple) aud com.acme.app, linking EmailCode, nonce required"), apple)
        XCTAssertTrue(try cli.fails(["realm", "provider", "acme", "idp", "--kind", "oidc", "--audience", "a"]).contains("Federation.IssuerRequired"))
        XCTAssertTrue(try cli.fails(["realm", "provider", "acme", "idp", "--kind", "saml", "--audience", "a"]).contains("Federation.InvalidKind"))
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("apple-\(UUID().uuidString).p8")
        try Data(Self.appleKey.utf8).write(to: keyFile)
        defer { try? FileManager.default.removeItem(at: keyFile) }
        let keyed = try cli.ok([
            "realm", "apple-key", "acme", "apple", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--client-id", "com.acme.app", "--key-file", keyFile.path,
        ])
        XCTAssertTrue(keyed.contains("Apple key KEY1234567 of team TEAM123456 for com.acme.app") && !keyed.contains("MIGHAgEA"), keyed)
        XCTAssertTrue(
            try cli.fails(["realm", "apple-key", "acme", "apple", "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--client-id", "com.other", "--key-file", keyFile.path])
                .contains("Federation.InvalidAppleClientId"))
        let linking = try cli.ok(["realm", "provider", "acme", "apple", "--kind", "apple", "--audience", "com.acme.app", "--linking", "Never"])
        XCTAssertTrue(linking.contains("linking Never, nonce required, Apple key KEY1234567"), "the key stays when the provider changes: \(linking)")
        XCTAssertFalse(try cli.ok(["realm", "apple-key", "acme", "apple", "--remove"]).contains("Apple key"))
        XCTAssertFalse(try cli.ok(["realm", "provider", "acme", "apple", "--remove"]).contains("provider     apple"))
        XCTAssertTrue(try cli.fails(["realm", "provider", "acme", "apple", "--remove"]).contains("Federation.ProviderNotFound"))

        XCTAssertTrue(try cli.fails(["realm", "create", "Bad Id", "--host", "x.test"]).contains("Realm."))
        XCTAssertTrue(try cli.fails(["realm", "update", "acme", "--rate-limit", "token.nope=1/60"]).contains("unknown rate-limit policy token.nope"))
        XCTAssertTrue(try cli.fails(["realm", "update", "acme", "--session-days", "0"]).contains("Session.InvalidAbsoluteLifetime"))
        XCTAssertTrue(try cli.fails(["realm", "show", "nowhere"]).contains("no such realm"))
    }

    /// Issue 41: a realm made RS256 from the start, and a rotated-out key retired: refused in
    /// its overlap and while active, done when forced, gone from the show.
    func testSigningKeysAreChosenAtCreationAndRetired() throws {
        let created = try cli.ok(["realm", "create", "auth0", "--host", "auth0.acme.test", "--native-grants", "true", "--signing-algorithm", "RS256"])
        let first = try XCTUnwrap(created.firstMatch(of: /keys +(\S+) RS256 \(active\)/)?.output.1).description
        // Native grants on and no posture chosen: seed 001's JitOnOtp.
        XCTAssertTrue(created.contains("registration JitOnOtp (default)"), created)
        XCTAssertTrue(try cli.fails(["realm", "create", "nokey", "--host", "nokey.acme.test", "--signing-algorithm", "HS256"]).contains("--signing-algorithm"))
        XCTAssertTrue(try cli.fails(["realm", "retire-key", "auth0", first]).contains("SigningKey.Active"))
        _ = try cli.ok(["realm", "rotate-key", "auth0", "--algorithm", "RS256"])
        XCTAssertTrue(try cli.fails(["realm", "retire-key", "auth0", first]).contains("SigningKey.InOverlap"))
        XCTAssertEqual(try cli.ok(["realm", "retire-key", "auth0", first, "--force"]), "retired signing key \(first) of realm auth0\n")
        XCTAssertEqual(try cli.ok(["realm", "retire-key", "auth0", first, "--force"]), "signing key \(first) of realm auth0 was retired already\n")
        XCTAssertTrue(try cli.ok(["realm", "show", "auth0"]).contains("\(first) RS256 (retired)"))
        XCTAssertTrue(try cli.fails(["realm", "retire-key", "auth0", "no-such-kid"]).contains("SigningKey.NotFound"))
        // Without the master key no key can be made: nothing is created.
        let outcome = try cli.run(["realm", "create", "sealed", "--host", "sealed.acme.test", "--signing-algorithm", "RS256"], withMasterKey: false)
        XCTAssertNotEqual(outcome.status, 0)
        XCTAssertTrue(try cli.fails(["realm", "show", "sealed"]).contains("no such realm"))
    }

    func testClientCommandsFromCreationToDeletion() throws {
        try cli.ok(["realm", "create", "acme", "--host", "login.acme.test"])
        // Issue 65, item 7: no native grant while the realm's flag is off; the error names the setting.
        let off = try cli.fails(["client", "create", "acme", "ios", "--grant", "urn:cocoar:otp", "--grant", "refresh_token", "--scope", "openid"])
        for named in ["Client.NativeGrantsDisabled", "urn:cocoar:otp", "NativeGrants.Enabled", "modgud realm update <realm> --native-grants true"] {
            XCTAssertTrue(off.contains(named), "\(named) in \(off)")
        }
        XCTAssertTrue(try cli.fails(["client", "show", "acme", "ios"]).contains("no client ios"), "nothing was created")
        _ = try cli.ok(["realm", "update", "acme", "--native-grants", "true"])
        let created = try cli.ok(["client", "create", "acme", "ios", "--grant", "urn:cocoar:otp", "--grant", "refresh_token", "--scope", "openid"])
        XCTAssertTrue(created.contains("client       ios (public, enabled)"), created)
        let confidential = try cli.ok(["client", "create", "acme", "svc", "--type", "confidential", "--grant", "client_credentials", "--scope", "api"])
        let secret = try XCTUnwrap(confidential.firstMatch(of: /secret\s+(\S{43})/)?.output.1)
        let rotated = try cli.ok(["client", "rotate-secret", "acme", "svc"])
        XCTAssertFalse(rotated.contains(secret), "a new secret")
        XCTAssertEqual(try cli.ok(["client", "list", "acme"]).split(separator: "\n").count, 2)
        XCTAssertTrue(try cli.ok(["client", "update", "acme", "ios", "--rp-id", "ios.acme.test"]).contains("rp-id        ios.acme.test"))
        XCTAssertTrue(try cli.ok(["client", "update", "acme", "ios", "--dpop", "required"]).contains("tokens       reference, DPoP required"))
        XCTAssertTrue(try cli.fails(["client", "update", "acme", "ios", "--dpop", "sometimes"]).contains("--dpop is off, allowed or required"))
        XCTAssertTrue(
            try cli.fails(["client", "update", "acme", "ios", "--passkey-sign-up", "true"]).contains("Client.SignUpNeedsPasskeyGrant"))
        let signUp = try cli.ok(["client", "update", "acme", "ios", "--grant", "urn:cocoar:passkey", "--grant", "refresh_token", "--passkey-sign-up", "true"])
        XCTAssertTrue(signUp.contains("sign-up      passkey"), signUp)
        XCTAssertTrue(try cli.fails(["client", "app-links", "acme", "ios"]).contains("has apps"))
        let apps = try cli.ok([
            "client", "update", "acme", "ios", "--apple-app-id", "ABCDE12345.com.acme.app", "--android-app",
            "com.acme.app=14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5",
        ])
        XCTAssertTrue(apps.contains("ios app      ABCDE12345.com.acme.app"), apps)
        let links = try cli.ok(["client", "app-links", "acme", "ios"])
        XCTAssertTrue(links.contains("# https://ios.acme.test/.well-known/apple-app-site-association"), links)
        XCTAssertTrue(links.contains(#""ABCDE12345.com.acme.app""#) && links.contains(#""package_name" : "com.acme.app""#), links)
        let aasa = try cli.ok(["client", "app-links", "acme", "ios", "--only", "aasa"])
        XCTAssertEqual(
            try JSONSerialization.jsonObject(with: Data(aasa.utf8)) as? [String: [String: [String]]],
            ["webcredentials": ["apps": ["ABCDE12345.com.acme.app"]]])
        // Issue 47: the Play Console's keys for the Android app; the decryption key is read from a
        // file and never printed.
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("play-\(UUID().uuidString).key")
        let decryptionKey = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        try Data((decryptionKey + "\n").utf8).write(to: keyFile)
        defer { try? FileManager.default.removeItem(at: keyFile) }
        let verificationKey = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEceERjVcHrvBoH1vm7fhD5x/qU+3lmedG1fG9LhH+3SSGKGJLCSfP1qYy7D3b6zIf+Xm0k6g8yxN/MhnJICzKFw=="
        let play = ["client", "play-integrity", "acme", "ios", "com.acme.app", "--decryption-key-file", keyFile.path, "--verification-key", verificationKey]
        let withKeys = try cli.ok(play)
        XCTAssertTrue(withKeys.contains("Play Integrity keys set") && !withKeys.contains(decryptionKey), withKeys)
        XCTAssertTrue(try cli.fails(["client", "play-integrity", "acme", "ios", "com.other.app", "--decryption-key-file", keyFile.path,
            "--verification-key", verificationKey]).contains("Client.UnknownAndroidPackage"))
        XCTAssertTrue(try cli.fails(["client", "play-integrity", "acme", "ios", "com.acme.app"]).contains("--remove"))
        XCTAssertFalse(try cli.ok(["client", "play-integrity", "acme", "ios", "com.acme.app", "--remove"]).contains("Play Integrity keys set"))
        // With magic links, the realm's link host serves applinks for /magic-login too (issue 25).
        _ = try cli.ok(["client", "update", "acme", "ios", "--grant", "urn:cocoar:passkey", "--grant", "urn:cocoar:magic", "--grant", "refresh_token"])
        let both = try cli.ok(["client", "app-links", "acme", "ios"])
        XCTAssertTrue(both.contains("# https://login.acme.test/.well-known/apple-app-site-association"), both)
        XCTAssertTrue(both.contains(#""/" : "/magic-login""#) && both.contains("delegate_permission/common.handle_all_urls"), both)
        // Two hosts serving different files: `--only` names them rather than printing two documents.
        XCTAssertTrue(try cli.fails(["client", "app-links", "acme", "ios", "--only", "aasa"]).contains("serve different aasa files"))
        // The RP-ID on the link host: one host, one document (issue 41: it was printed twice on Linux).
        _ = try cli.ok(["client", "update", "acme", "ios", "--rp-id", "login.acme.test"])
        let single = try cli.ok(["client", "app-links", "acme", "ios", "--only", "aasa"])
        let document = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(single.utf8)) as? [String: Any], single)
        XCTAssertEqual(Set(document.keys), ["webcredentials", "applinks"], single)
        // Issue 65, item 6: the iOS app's URL scheme, for the /magic-login button.
        XCTAssertTrue(try cli.ok(["client", "update", "acme", "ios", "--app-url-scheme", "acme-app"]).contains("url scheme   acme-app://magic-login"))
        XCTAssertTrue(try cli.fails(["client", "update", "acme", "ios", "--app-url-scheme", "https"]).contains("Client.InvalidAppUrlScheme"))
        // Issue 65, item 7: the flag off, the client's native grants are inert: `realm show` lists
        // them, the client's other settings still change, and no native grant is added.
        let inert = "inert        native grants (realm flag off; --native-grants true turns them on): ios (urn:cocoar:magic, urn:cocoar:passkey)"
        XCTAssertTrue(try cli.ok(["realm", "update", "acme", "--native-grants", "false"]).contains(inert))
        XCTAssertTrue(try cli.ok(["realm", "show", "acme"]).contains(inert))
        XCTAssertTrue(try cli.ok(["client", "update", "acme", "ios", "--scope", "openid", "--scope", "email"]).contains("scopes       email openid"))
        XCTAssertTrue(
            try cli.fails(["client", "update", "acme", "ios", "--grant", "urn:cocoar:otp", "--grant", "urn:cocoar:magic"]).contains("Client.NativeGrantsDisabled"))
        XCTAssertFalse(try cli.ok(["realm", "update", "acme", "--native-grants", "true"]).contains("inert"))
        XCTAssertTrue(try cli.ok(["client", "disable", "acme", "ios"]).contains("disabled"))
        XCTAssertTrue(try cli.ok(["client", "enable", "acme", "ios"]).contains("enabled"))
        XCTAssertTrue(try cli.ok(["client", "show", "acme", "ios"]).contains("ios (public, enabled)"))
        XCTAssertEqual(try cli.ok(["client", "delete", "acme", "ios"]), "deleted client ios of realm acme\n")
        XCTAssertTrue(try cli.fails(["client", "show", "acme", "ios"]).contains("no client ios"))
        XCTAssertTrue(try cli.fails(["client", "create", "acme", "ios", "--grant", "refresh_token"]).contains("Client.Deleted"))
        XCTAssertTrue(
            try cli.fails(["client", "create", "acme", "bad", "--grant", "client_credentials", "--grant", "urn:cocoar:otp"]).contains(
                "Client.MixedGrants"))
    }

    func testUserAndAuditCommands() throws {
        try cli.ok(["realm", "create", "acme", "--host", "login.acme.test"])
        let created = try cli.ok(["user", "create", "acme", "Ada@Example.com", "--first-name", "Ada"])
        let id = try XCTUnwrap(created.split(separator: "\t").first.map(String.init))
        XCTAssertEqual(created, "\(id)\tada@example.com\tactive\n")
        XCTAssertTrue(try cli.ok(["user", "list", "acme"]).contains("ada@example.com\tactive"))
        // Without the master key the address is sealed, not erased (issue 41).
        let sealedList = try cli.run(["user", "list", "acme"], withMasterKey: false)
        XCTAssertEqual(sealedList.output, "\(id)\t[sealed]\tactive\n")
        XCTAssertTrue(sealedList.error.contains("set MODGUD_MASTER_KEY"), sealedList.error)
        XCTAssertTrue(try cli.ok(["user", "show", "acme", "ada@example.com"]).contains("name         Ada"))
        XCTAssertTrue(try cli.ok(["user", "totp-enable", "acme", id]).contains("otpauth://totp/"))
        try cli.ok(["user", "totp-disable", "acme", id])
        XCTAssertTrue(try cli.ok(["user", "disable", "acme", id]).contains("status disabled"))
        XCTAssertTrue(try cli.ok(["user", "enable", "acme", id]).contains("status active"))
        try cli.ok(["user", "logout-everywhere", "acme", id])
        XCTAssertEqual(try cli.ok(["user", "passkeys", "acme", id]).split(separator: "\n").filter { !$0.isEmpty && !$0.hasPrefix("ID") }.count, 0)
        let audit = try cli.ok(["audit", "user", "acme", "ada@example.com"])
        for event in ["user.registered", "user.totp_enabled", "user.disabled", "user.enabled", "reason=logout_everywhere"] {
            XCTAssertTrue(audit.contains(event), "audit lacks \(event):\n\(audit)")
        }
        XCTAssertTrue(try cli.ok(["user", "delete", "acme", id]).contains("status deleted"))
        XCTAssertTrue(try cli.fails(["user", "show", "acme", "nobody@example.com"]).contains("no such user"))
        XCTAssertTrue(try cli.fails(["user", "create", "acme", "not an address"]).contains("Email.Invalid"))
        XCTAssertFalse(try cli.fails(["audit", "user", "acme", "nobody@example.com"]).isEmpty)
        XCTAssertTrue(try cli.fails(["user", "totp-enable", "acme", id], withMasterKey: false).contains("MODGUD_MASTER_KEY"))
    }

    /// Issue 13: erasure, the privacy commands, and what replay shows before and after.
    func testEraseAndPrivacyCommands() throws {
        try cli.ok(["realm", "create", "acme", "--host", "login.acme.test"])
        let created = try cli.ok(["user", "create", "acme", "Eve@Example.com", "--first-name", "Evangelina"])
        let id = try XCTUnwrap(created.split(separator: "\t").first.map(String.init))
        let sealed = try cli.ok(["events", "replay"])
        XCTAssertFalse(sealed.contains("eve@example.com") || sealed.contains("Evangelina"), sealed)
        XCTAssertTrue(try cli.ok(["events", "replay", "--open"]).contains("Evangelina"))
        XCTAssertTrue(try cli.fails(["events", "replay", "--open"], withMasterKey: false).contains("MODGUD_MASTER_KEY"))
        let status = try cli.ok(["privacy", "status"])
        XCTAssertTrue(status.contains("user keys        1 (0 erased)") && status.contains("none in plaintext"), status)
        let dry = try cli.ok(["privacy", "seal-legacy"])
        XCTAssertTrue(dry.contains("events to rewrite 0") && dry.contains("dry run"), dry)

        let erased = try cli.ok(["user", "erase", "acme", "eve@example.com"])
        XCTAssertTrue(erased.contains("\(id) erased") && erased.contains("keys         1 shredded"), erased)
        XCTAssertTrue(try cli.ok(["events", "replay", "--type", "user.registered"]).contains(#""email":"[erased]""#))
        XCTAssertTrue(try cli.ok(["user", "show", "acme", id]).contains("[erased]"))
        XCTAssertTrue(try cli.ok(["user", "erase", "acme", id]).contains("was erased already"))
        XCTAssertTrue(try cli.ok(["privacy", "status"]).contains("user keys        0 (1 erased)"))
        XCTAssertTrue(try cli.fails(["user", "erase", "acme", "nobody@example.com"]).contains("User.NotFound"))
    }

    func testEventsProjectionsAndMailCommands() throws {
        try cli.ok(["realm", "create", "acme", "--host", "login.acme.test"])
        try cli.ok(["user", "create", "acme", "ada@example.com"])
        let replay = try cli.ok(["events", "replay"]).split(separator: "\n")
        XCTAssertEqual(replay.count, 2)
        XCTAssertTrue(replay[0].contains(#""type":"realm.created""#))
        let cursor = try XCTUnwrap(replay[0].firstMatch(of: /"cursor":"(\d+:\d+)"/)?.output.1)
        let after = try cli.ok(["events", "replay", "--after", String(cursor), "--type", "user.registered"])
        XCTAssertEqual(after.split(separator: "\n").count, 1)
        XCTAssertTrue(try cli.fails(["events", "replay", "--after", "garbage"]).contains("--after must look like"))
        XCTAssertTrue(try cli.ok(["events", "prune"]).contains("pruned 0 one-shot streams"))
        XCTAssertTrue(try cli.fails(["events", "prune", "--retention-days", "0"]).contains("at least 1"))

        XCTAssertTrue(try cli.ok(["projections", "list"]).contains("tokens\tinline\ttables: token_families, access_tokens, refresh_tokens"))
        XCTAssertTrue(try cli.ok(["projections", "status"]).contains("log_statistics\tasync"))
        XCTAssertTrue(try cli.ok(["projections", "rebuild", "user_directory"]).contains("user_directory"))
        XCTAssertTrue(try cli.fails(["projections", "rebuild", "nope"]).contains("no projection named nope"))

        XCTAssertTrue(try cli.ok(["mail", "status"]).contains("pending 0, dead 0"))
        XCTAssertEqual(try cli.ok(["mail", "retry-dead"]), "0 dead mails are pending again\n")
        XCTAssertTrue(try cli.fails(["mail", "status"], withMasterKey: false).contains("MODGUD_MASTER_KEY"))
    }

    func testAttestationStatusListImportReplacesTheShippedList() throws {
        XCTAssertTrue(try cli.ok(["attestation", "status-list", "show"]).contains("source: shipped"))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("status-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"entries": {"2C8CDD": {"status": "REVOKED", "reason": "KEY_COMPROMISE"}, "ab": {"status": "SUSPENDED"}, "cd": {"status": "OK"}}}"#.utf8)
            .write(to: file)
        XCTAssertTrue(try cli.ok(["attestation", "status-list", "import", file.path]).contains("imported 2 revoked or suspended serials"))
        let shown = try cli.ok(["attestation", "status-list", "show"])
        XCTAssertTrue(shown.contains("source: imported") && shown.contains("refused entries: 2"), shown)
        try Data("[1, 2]".utf8).write(to: file)
        XCTAssertTrue(try cli.fails(["attestation", "status-list", "import", file.path]).contains("StatusList.Malformed"))
        XCTAssertTrue(try cli.ok(["attestation", "status-list", "show"]).contains("refused entries: 2"), "a malformed file changes nothing")
    }
}
