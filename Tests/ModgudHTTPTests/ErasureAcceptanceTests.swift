import EmbeddedPostgres
import EventStorePostgres
import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 13 acceptance: a person signs up, signs in every way, then is erased; afterwards
/// nothing in a `pg_dump` of the database, the server's logs or the outbox reveals their
/// address or names, their sessions are over, the address signs up again as a new user, and
/// the log still replays and every projection rebuilds.
final class ErasureAcceptanceTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    static let address = "zyxwquartz.erasure@example.com"
    static let localPart = "zyxwquartz.erasure"
    static let firstName = "Quillonia"
    static let lastName = "Brambleworth"

    override func tearDown() async throws {
        await harness?.close()
    }

    func testAnErasedPersonLeavesNoTraceAndTheLogStillReplays() async throws {
        harness = try await EmailSignInHarness(settings: {
            $0.registrationFields.firstname = .optional
            $0.registrationFields.lastname = .optional
            $0.primaryDomain = "acme.test"
        })
        let harness = self.harness!
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "ios",
            settings: ClientSettings(
                type: .public, grants: [.otp, .magic, .passkey, .refreshToken], allowedScopes: ["openid", "email", "profile", "offline_access"],
                rpID: "ios.acme.test"),
            metadata: .init())
        let steps = PasskeySteps(harness: harness)
        let admin: HTTPFields = [.authorization: "Bearer \(H.adminToken)"]
        let address = Self.address
        try await harness.app.test(.live) { client in
            // Sign up with a code, names included.
            _ = try await H.requestCode(client, address, extra: ["FirstName": Self.firstName, "LastName": Self.lastName])
            let signUp = try await H.redeemCode(
                client, address, try await harness.code(for: address), clientID: "ios", scope: "openid email profile offline_access")
            XCTAssertEqual(signUp.status, .ok, signUp.body)
            let firstRow = try await harness.core.pool.query("SELECT user_id FROM users").first
            let userID = try XCTUnwrap(try firstRow?.decode(UUID.self, at: 0))
            let before = try await H.call(client, .get, "/connect/userinfo", "", headers: PasskeySteps.bearer(signUp.json["access_token"] as! String))
            XCTAssertEqual(before.json["email"] as? String, address, "sealed, and opened for the answer")
            XCTAssertEqual(before.json["given_name"] as? String, Self.firstName)

            // Sign in with a login code, with a magic link, enroll a passkey and sign in with it.
            harness.clock.advance(121)
            _ = try await H.requestCode(client, address)
            let login = try await H.redeemCode(client, address, try await harness.code(for: address, number: 2), clientID: "ios")
            XCTAssertEqual(login.status, .ok, login.body)
            _ = try await H.call(client, .post, "/api/account/magic-link/request", #"{"Email":"\#(address)"}"#, headers: H.json)
            let link = try await harness.magicLink(for: address)
            let magic = try await H.token(
                client, [("grant_type", "urn:cocoar:magic"), ("client_id", "ios"), ("user_id", link.userID), ("magic_token", link.token),
                         ("scope", "openid offline_access")])
            XCTAssertEqual(magic.status, .ok, magic.body)
            let bearer = try XCTUnwrap(login.json["access_token"] as? String)
            var (credential, _) = try await steps.enroll(client, token: bearer, origin: "https://ios.acme.test")
            let ceremony = try await steps.begin(client, clientID: "ios")
            let assertion = steps.json(steps.authenticator.assert(&credential, .init(challenge: ceremony.challenge, origin: "https://ios.acme.test")))
            let passkey = try await steps.redeem(client, clientID: "ios", ceremony: ceremony.id, assertion: assertion)
            XCTAssertEqual(passkey.status, .ok, passkey.body)

            // Rotate the first session's refresh token twice.
            var refresh = try XCTUnwrap(signUp.json["refresh_token"] as? String)
            var access = ""
            for _ in 0..<2 {
                let rotated = try await H.token(client, [("grant_type", "refresh_token"), ("client_id", "ios"), ("refresh_token", refresh)])
                XCTAssertEqual(rotated.status, .ok, rotated.body)
                XCTAssertNotNil(rotated.json["id_token"], "the ID token carries the opened claims")
                refresh = try XCTUnwrap(rotated.json["refresh_token"] as? String)
                access = try XCTUnwrap(rotated.json["access_token"] as? String)
            }

            // An operator looks the person up by address: the access log must not keep it.
            let byAddress = try await H.call(client, .get, "/admin/api/realms/dev/users/\(address)/passkeys", "", headers: admin)
            XCTAssertEqual(byAddress.status, .ok, byAddress.body)
            let auditBefore = try await H.call(client, .get, "/admin/api/realms/dev/users/\(userID.uuidString.lowercased())/audit", "", headers: admin)
            XCTAssertTrue(auditBefore.body.contains("email=\(address)"), auditBefore.body)

            // The audit log integrates the person's events before the erasure.
            let auditLog = AuditLogIntegrator(
                pool: harness.core.pool, signer: harness.core.auditKeys, settings: .init(checkpointInterval: .seconds(3600), checkpointLeaves: 1))
            while case .applied = try await auditLog.step(AuditLogIntegrator.name) {}
            let integrated = try await AuditLogReader(pool: harness.core.pool).size(realm: "dev")

            // Erase, through the admin API.
            let erased = try await H.call(client, .delete, "/admin/api/realms/dev/users/\(userID.uuidString.lowercased())?erase=true", "", headers: admin)
            XCTAssertEqual(erased.status, .ok, erased.body)
            XCTAssertEqual(erased.json["ErasedNow"] as? Bool, true)
            XCTAssertEqual(erased.json["PasskeysDeleted"] as? Int, 1)
            XCTAssertEqual(erased.json["FamiliesRevoked"] as? Int, 4, "code sign-up, code sign-in, magic link, passkey")
            XCTAssertEqual(erased.json["KeysShredded"] as? Int, 1)

            // Live sessions end at once.
            let userinfo = try await H.call(client, .get, "/connect/userinfo", "", headers: PasskeySteps.bearer(access))
            XCTAssertEqual(userinfo.status, .unauthorized)
            let refused = try await H.token(client, [("grant_type", "refresh_token"), ("client_id", "ios"), ("refresh_token", refresh)])
            XCTAssertEqual(refused.status, .badRequest)
            let again = try await steps.begin(client, clientID: "ios")
            let afterPasskey = try await steps.redeem(
                client, clientID: "ios", ceremony: again.id,
                assertion: steps.json(steps.authenticator.assert(&credential, .init(challenge: again.challenge, origin: "https://ios.acme.test"))))
            XCTAssertEqual(afterPasskey.status, .badRequest)

            // No trace: a pg_dump of the whole database, the server's logs, the outbox.
            let dump = try EmbeddedPostgres.dump(url: harness.database.url)
            XCTAssertTrue(dump.contains("user.erased"), "the dump is of this database")
            for (place, text) in [("pg_dump", dump), ("logs", harness.logs.text)] {
                for needle in Self.traces() {
                    XCTAssertFalse(text.lowercased().contains(needle.lowercased()), "\(place) holds \(needle)")
                }
            }
            let outbox = try await harness.core.pool.query("SELECT count(*) FROM mail_outbox").first?.decode(Int.self, at: 0)
            XCTAssertEqual(outbox, 0)

            // The audit keeps the history and shows [erased] where the data was.
            let audit = try await H.call(client, .get, "/admin/api/realms/dev/users/\(userID.uuidString.lowercased())/audit", "", headers: admin)
            XCTAssertEqual(audit.status, .ok)
            XCTAssertTrue(audit.body.contains("email=[erased]"), audit.body)
            XCTAssertTrue(audit.body.contains("user.erased") && audit.body.contains("token_family.refreshed"), audit.body)

            // Erasing twice is harmless.
            let twice = try await H.call(client, .delete, "/admin/api/realms/dev/users/\(userID.uuidString.lowercased())?erase=true", "", headers: admin)
            XCTAssertEqual(twice.status, .ok, twice.body)
            XCTAssertEqual(twice.json["ErasedNow"] as? Bool, false)

            // The address signs up again, as a new user.
            harness.clock.advance(121)
            _ = try await H.requestCode(client, address)
            // The third code mail: registration code, login code, this one (the magic link is no code).
            let second = try await H.redeemCode(client, address, try await harness.code(for: address, number: 3), clientID: "ios")
            XCTAssertEqual(second.status, .ok, second.body)
            let newID = try await harness.core.administration.users.find(realm: "dev", address)
            XCTAssertNotNil(newID)
            XCTAssertNotEqual(newID, userID)

            // Crypto-shredding left every row the leaves cover as it was: the log verifies.
            while case .applied = try await auditLog.step(AuditLogIntegrator.name) {}
            await auditLog.shutdown()
            let key = try await harness.core.auditKeys.publicKey(realm: "dev")
            let report = try await AuditLogVerifier(pool: harness.core.pool, origin: try XCTUnwrap(key).origin, publicKey: key!.publicKey).verify(realm: "dev")
            XCTAssertNil(report.finding, "\(report.finding!)")
            XCTAssertGreaterThan(report.leavesChecked, integrated, "the leaves from before the erasure and after it")
        }

        // Replay shows [erased] where the erased person's data was; every projection rebuilds.
        let renderer = SealedFieldRenderer(pool: harness.core.pool, vault: harness.core.vault, opening: true)
        let payloads = try await harness.core.pool.query(
            "SELECT payload::text FROM events WHERE stream_id = \("user-" + (try await erasedID()).uuidString.lowercased()) ORDER BY position"
        ).rows.map { try $0.decode(String.self, at: 0) }
        let registered = try await renderer.render(try XCTUnwrap(payloads.first))
        XCTAssertTrue(registered.contains(#""email":"[erased]""#), registered)
        XCTAssertTrue(registered.contains(#""firstName":"[erased]""#), registered)
        let usersBefore = try await harness.core.pool.query("SELECT user_id, status, email_key IS NULL FROM users ORDER BY user_id").rows.count
        for projection in ProjectionCatalog.all {
            _ = try await ProjectionRebuilder(pool: harness.core.pool).rebuild(projection)
        }
        let tombstone = try await harness.core.pool.query(
            "SELECT status, email, email_key, first_name FROM users WHERE user_id = \(try await erasedID())"
        ).first
        XCTAssertEqual(try tombstone?.decode(String.self, at: 0), "erased")
        XCTAssertNil(try tombstone?.decode(String?.self, at: 1))
        XCTAssertNil(try tombstone?.decode(String?.self, at: 2))
        XCTAssertNil(try tombstone?.decode(String?.self, at: 3))
        let usersAfter = try await harness.core.pool.query("SELECT user_id FROM users").rows.count
        XCTAssertEqual(usersAfter, usersBefore)
        let found = try await harness.core.administration.users.find(realm: "dev", Self.address)
        XCTAssertNotNil(found, "the new account is found by its address after the rebuild")
    }

    /// Erasing an address that has only a pending registration shreds that registration's key:
    /// the code it mailed can no longer create the user (decided in the redeeming transaction).
    func testAPendingRegistrationErasedWhileItsCodeIsOutCannotSignUp() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "pending.person@example.com")
            let code = try await harness.code(for: "pending.person@example.com")
            let erased = try await H.call(
                client, .delete, "/admin/api/realms/dev/users/pending.person@example.com?erase=true", "", headers: [.authorization: "Bearer \(H.adminToken)"])
            XCTAssertEqual(erased.status, .ok, erased.body)
            XCTAssertNil(erased.json["Id"], "no user existed")
            XCTAssertEqual(erased.json["KeysShredded"] as? Int, 1, "the pending registration's key")
            let redeemed = try await H.redeemCode(client, "pending.person@example.com", code)
            XCTAssertEqual(redeemed.status, .badRequest, redeemed.body)
            XCTAssertEqual(redeemed.json["error_description"] as? String, "Invalid or expired code.")
            let users = try await harness.userCount("pending.person@example.com")
            XCTAssertEqual(users, 0)
            let unknown = try await H.call(
                client, .delete, "/admin/api/realms/dev/users/nobody.at.all@example.com?erase=true", "", headers: [.authorization: "Bearer \(H.adminToken)"])
            XCTAssertEqual(unknown.status, .notFound, "nothing to erase")
        }
    }

    private func erasedID() async throws -> UUID {
        let row = try await harness.core.pool.query("SELECT user_id FROM users WHERE status = 'erased'").first
        return try XCTUnwrap(try row?.decode(UUID.self, at: 0))
    }

    /// The person's data in every encoding the code uses: plain, JSON-escaped, and base64 or
    /// base64url at each of the three alignments (the middle of a longer encoded text).
    static func traces() -> [String] {
        var traces: [String] = []
        for value in [address, localPart, firstName, lastName] {
            traces.append(value)
            traces.append(value.replacingOccurrences(of: "@", with: "\\u0040"))
            for offset in 0..<3 {
                let encoded = Data(Array(repeating: UInt8(0), count: offset) + Array(value.utf8)).base64EncodedString()
                let stable = String(encoded.dropFirst(offset == 0 ? 0 : (offset * 4 + 2) / 3 + 1).dropLast(4))
                guard stable.count >= 8 else { continue }
                traces.append(stable)
                traces.append(stable.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_"))
            }
        }
        return traces
    }
}
