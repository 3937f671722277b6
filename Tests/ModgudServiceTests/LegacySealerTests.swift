import EventSourcing
import Foundation
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

/// Issue 13, item 5: events written before sealing began are rewritten once, in place, by
/// `modgud privacy seal-legacy`: no plaintext left, positions and versions kept, idempotent,
/// and the users read model rebuilt so the account is found by its blind index.
final class LegacySealerTests: XCTestCase {
    func testLegacyEventsAreSealedInPlaceOnceAndTheAccountStillSignsIn() async throws {
        let database = try await TestDatabase.create()
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 6, count: 32))
        let admin = core.administration
        _ = try await admin.realms.create("r", settings: RealmSettings(hosts: ["r.test"], displayName: "R"), metadata: .init())
        // What an older version wrote: plaintext address and names, a plaintext client IP.
        let id = UUID()
        let stream = StreamNames.user(realm: "r", userID: id)
        _ = try await core.userActors.actor(for: stream).execute(
            .register(id: id, email: .plain("legacy.person@example.com"), emailConfirmed: true, username: nil, firstName: .plain("Oldname"),
                lastName: nil, securityStamp: "s", via: "otp"),
            now: Date(), metadata: EventMetadata(actor: "user:x"))
        _ = try await database.pool.query(
            """
            UPDATE events SET metadata = jsonb_set(metadata, '{clientIP}', '"198.51.100.7"') WHERE stream_id = \(stream.id)
            """)
        let before = try await database.pool.query("SELECT position, stream_version FROM events WHERE stream_id = \(stream.id)").first
        let legacyFound = try await admin.users.find(realm: "r", "legacy.person@example.com")
        XCTAssertEqual(legacyFound, id, "legacy rows are found by their plain key")

        let dry = try await core.legacySealer(addressRetention: 30 * 86_400).run(dryRun: true)
        XCTAssertEqual(dry.eventsRewritten, 1)
        let untouched = try await database.pool.query("SELECT payload::text FROM events WHERE stream_id = \(stream.id)").first?.decode(String.self, at: 0)
        XCTAssertTrue(try XCTUnwrap(untouched).contains("legacy.person@example.com"), "a dry run writes nothing")

        let report = try await core.legacySealer(addressRetention: 30 * 86_400).run(dryRun: false)
        XCTAssertEqual(report.eventsRewritten, 1)
        XCTAssertEqual(report.addressesSealed, 1)
        let row = try await database.pool.query(
            "SELECT position, stream_version, payload::text, metadata::text FROM events WHERE stream_id = \(stream.id)"
        ).first
        XCTAssertEqual(try row?.decode(Int64.self, at: 0), try before?.decode(Int64.self, at: 0), "same position")
        XCTAssertEqual(try row?.decode(Int64.self, at: 1), try before?.decode(Int64.self, at: 1), "same version")
        let payload = try XCTUnwrap(try row?.decode(String.self, at: 2))
        let metadata = try XCTUnwrap(try row?.decode(String.self, at: 3))
        for plain in ["legacy.person", "Oldname"] { XCTAssertFalse(payload.contains(plain), payload) }
        XCTAssertFalse(metadata.contains("198.51.100.7"), metadata)
        XCTAssertTrue(payload.contains("pd1."), payload)
        let users = try await database.pool.query("SELECT email, email_key FROM users").first
        XCTAssertFalse(try XCTUnwrap(try users?.decode(String.self, at: 0)).contains("legacy.person"), "the read model was rebuilt")
        XCTAssertFalse(try XCTUnwrap(try users?.decode(String.self, at: 1)).hasPrefix("plain:"))
        let sealedFound = try await admin.users.find(realm: "r", "legacy.person@example.com")
        XCTAssertEqual(sealedFound, id, "found by the blind index now")
        let profile = try await admin.users.profile(realm: "r", userID: id).profile
        XCTAssertEqual(profile.email, "legacy.person@example.com")
        XCTAssertEqual(profile.firstName, "Oldname")
        let pending = try await LegacySealer.pending(pool: database.pool)
        XCTAssertFalse(pending)

        let second = try await core.legacySealer(addressRetention: 30 * 86_400).run(dryRun: false)
        XCTAssertEqual(second.eventsRewritten, 0, "idempotent")
        let erased = try await admin.users.erase(realm: "r", id.uuidString, metadata: .init())
        XCTAssertEqual(erased.keysShredded, 1, "a sealed legacy user can be erased")
        await database.drop()
    }

    /// Issue 22: passkey names written in plain text (before they were sealed) are sealed under
    /// the owner's key, the renamed one found through its stream's enrolment, and the passkeys
    /// read model is rebuilt.
    func testLegacyPasskeyNamesAreSealedAndTheReadModelRebuilt() async throws {
        let database = try await TestDatabase.create()
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 6, count: 32))
        _ = try await core.administration.realms.create("r", settings: RealmSettings(hosts: ["r.test"], displayName: "R"), metadata: .init())
        let owner = UUID()
        let passkeyID = UUID()
        let stream = StreamNames.passkey(realm: "r", passkeyID: passkeyID)
        let actor = await core.passkeyActors.actor(for: stream)
        _ = try await actor.execute(
            .enroll(
                PasskeyEnrolled(
                    passkeyID: passkeyID, userID: owner, credentialID: "Y3JlZA", rpID: "r.test", publicKey: "cGs", algorithm: -7, signCount: 0,
                    aaguid: "AA", backupEligible: false, backedUp: false, transports: [], attestationFormat: "none",
                    displayName: .plain("Oldname's phone"), clientID: "app", createdAt: Date())), now: Date(), metadata: .init())
        _ = try await actor.execute(
            .rename("Oldname's tablet", sealed: .plain("Oldname's tablet"), current: "Oldname's phone", by: "user:x"), now: Date(), metadata: .init())
        let report = try await core.legacySealer(addressRetention: 30 * 86_400).run(dryRun: false)
        XCTAssertEqual(report.eventsRewritten, 2, "the enrolment and the rename")
        let stored = try await database.pool.query(
            "SELECT string_agg(payload::text, ' ') FROM events WHERE stream_id = \(stream.id)").first?.decode(String.self, at: 0) ?? ""
        XCTAssertFalse(stored.contains("Oldname"), stored)
        let row = try await database.pool.query("SELECT display_name FROM passkeys").first?.decode(String.self, at: 0) ?? ""
        XCTAssertTrue(row.hasPrefix("pd1."), "the read model was rebuilt from the sealed events: \(row)")
        let listed = try await core.passkeys.list(realm: "r", userID: owner)
        XCTAssertEqual(listed.map(\.displayName), ["Oldname's tablet"], "opened for its owner")
        await database.drop()
    }
}
