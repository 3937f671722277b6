import Foundation
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

/// Issue 13's foundation: per-subject data keys in PostgreSQL, erasure by deleting the key.
final class PersonalDataVaultTests: XCTestCase {
    var database: TestDatabase!
    let masterKey = Array(repeating: UInt8(9), count: 32)

    override func tearDown() async throws {
        await database?.drop()
    }

    func testSealedTextOpensUntilItsSubjectIsShredded() async throws {
        database = try await TestDatabase.create()
        let vault = try PersonalDataVault(pool: database.pool, masterKey: masterKey)
        let first = try await vault.seal("ada.lovelace@example.com", subject: "user:1", realm: "r")
        let second = try await vault.seal("ada.lovelace@example.com", subject: "user:1", realm: "r")
        XCTAssertNotEqual(first, second, "a fresh nonce each time")
        XCTAssertFalse(first.stored.contains("lovelace"))
        XCTAssertFalse(first.description.contains("lovelace"), "logs show whose data, never the data")
        let opened = try await vault.open(first)
        XCTAssertEqual(opened, "ada.lovelace@example.com")
        let other = try await vault.seal("bob@example.com", subject: "user:2", realm: "r")

        // Round trip through JSON, as in an event payload.
        let json = try JSONEncoder().encode(["email": first])
        let decoded = try JSONDecoder().decode([String: SealedText].self, from: json)
        let reopened = try await vault.open(decoded["email"]!)
        XCTAssertEqual(reopened, "ada.lovelace@example.com")

        let shredded = try await vault.shred(subject: "user:1", realm: "r")
        XCTAssertTrue(shredded)
        let afterShred = try await vault.open(first)
        XCTAssertNil(afterShred, "erased: the key is gone")
        // A second vault (another instance, no cache) cannot open it either.
        let elsewhere = try PersonalDataVault(pool: database.pool, masterKey: masterKey)
        let elsewhereOpened = try await elsewhere.open(second)
        XCTAssertNil(elsewhereOpened)
        let untouched = try await elsewhere.open(other)
        XCTAssertEqual(untouched, "bob@example.com", "other subjects keep their data")
        let again = try await vault.shred(subject: "user:1", realm: "r")
        XCTAssertFalse(again, "erasing twice is harmless")
        do {
            _ = try await vault.seal("again@example.com", subject: "user:1", realm: "r")
            XCTFail("an erased subject gets no new key")
        } catch let erased as PersonalDataVault.SubjectErased {
            XCTAssertEqual(erased.subject, "user:1")
        }
        let keys = try await database.pool.query("SELECT subject FROM subject_keys ORDER BY 1").rows.map { try $0.decode(String.self, at: 0) }
        XCTAssertEqual(keys, ["user:2"])
    }

    func testATextMovedToAnotherSubjectOrAlteredDoesNotOpen() async throws {
        database = try await TestDatabase.create()
        let vault = try PersonalDataVault(pool: database.pool, masterKey: masterKey)
        let sealed = try await vault.seal("ada@example.com", subject: "user:1", realm: "r")
        _ = try await vault.seal("x", subject: "user:2", realm: "r")
        let moved = try XCTUnwrap(SealedText(stored: String(sealed.stored.dropLast("user:1".count)) + "user:2"))
        let movedOpened = try await vault.open(moved)
        XCTAssertNil(movedOpened)
        XCTAssertNil(SealedText(stored: "ada@example.com"), "plain text is not a sealed text")
        XCTAssertNil(SealedText(stored: "pd1.!!!.user:1"))
        // Another master key cannot unwrap the data keys.
        let stranger = try PersonalDataVault(pool: database.pool, masterKey: Array(repeating: 1, count: 32))
        do {
            _ = try await stranger.open(sealed)
            XCTFail("another master key")
        } catch {}
    }

    func testConcurrentFirstSealsAcrossInstancesShareOneKey() async throws {
        database = try await TestDatabase.create(maxConnections: 20)
        let second = database.makePool(maxConnections: 10)
        let vaults = [
            try PersonalDataVault(pool: database.pool, masterKey: masterKey), try PersonalDataVault(pool: second, masterKey: masterKey),
        ]
        let sealed = try await withThrowingTaskGroup(of: SealedText.self) { group in
            for index in 0..<16 {
                let vault = vaults[index % 2]
                group.addTask { try await vault.seal("text \(index)", subject: "challenge:new", realm: "r") }
            }
            return try await group.reduce(into: [SealedText]()) { $0.append($1) }
        }
        for text in sealed {
            let opened = try await vaults[0].open(text)
            XCTAssertNotNil(opened, "every text sealed under the one key the database kept")
        }
        let count = try await database.pool.query("SELECT count(*)::int8 FROM subject_keys").first?.decode(Int64.self, at: 0)
        XCTAssertEqual(count, 1)
        await second.close()
    }

    func testBlindIndexIsKeyedAndPerRealm() throws {
        database = nil
        let pool = PQPool(configuration: PQConfiguration(connectionString: "postgresql://unused@127.0.0.1:1/none"))
        let vault = try PersonalDataVault(pool: pool, masterKey: masterKey)
        let index = vault.blindIndex("ada@example.com", realm: "r")
        XCTAssertEqual(index, vault.blindIndex("ada@example.com", realm: "r"))
        XCTAssertNotEqual(index, vault.blindIndex("ada@example.com", realm: "s"))
        XCTAssertNotEqual(index, vault.blindIndex("bob@example.com", realm: "r"))
        XCTAssertNotEqual(index, try PersonalDataVault(pool: pool, masterKey: Array(repeating: 1, count: 32)).blindIndex("ada@example.com", realm: "r"))
        XCTAssertFalse(index.contains("ada"))
    }
}
