import EventSourcing
import Foundation
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import Synchronization
import XCTest

/// Issue 13, item 4: client IPs in event metadata are sealed under a key per UTC day and
/// become unreadable once that day is past the retention; the rest of the history stays.
final class ClientAddressRetentionTests: XCTestCase {
    final class Clock: Sendable {
        let value = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        func now() -> Date { value.withLock { $0 } }
        func advance(days: Double) { value.withLock { $0 += days * 86_400 } }
    }

    func testAddressesAreSealedReadableInTheAuditAndExpireWithTheirDay() async throws {
        let database = try await TestDatabase.create()
        let clock = Clock()
        let core = try ModgudCore(pool: database.pool, masterKey: Array(repeating: 5, count: 32), now: { clock.now() })
        let admin = core.administration
        _ = try await admin.realms.create("r", settings: RealmSettings(hosts: ["r.test"], displayName: "R"), metadata: .init())
        let id = UUID()
        let stream = StreamNames.user(realm: "r", userID: id)
        _ = try await core.userActors.actor(for: stream).execute(
            .register(id: id, email: .plain("ada@example.com"), emailConfirmed: true, username: nil, firstName: nil, lastName: nil,
                securityStamp: "s", via: "otp"),
            now: clock.now(), metadata: EventMetadata(actor: "user:x", clientIP: "203.0.113.5"))

        let stored = try await database.pool.query("SELECT metadata::text FROM events WHERE stream_id = \(stream.id)").first?.decode(String.self, at: 0)
        XCTAssertFalse(try XCTUnwrap(stored).contains("203.0.113.5"), "the log never holds the address in plain text")
        XCTAssertTrue(try XCTUnwrap(stored).contains("ip:2027-01-15"), "sealed under the key of its UTC day")
        let audit = try await admin.audit.userHistory(realm: "r", userID: id)
        XCTAssertEqual(audit.first?.clientIP, "203.0.113.5", "recent: readable")

        // 30 days later the day is still inside the retention; 31 days later it is not.
        clock.advance(days: 30)
        let early = try await core.vault!.shredAddresses(before: clock.now().addingTimeInterval(-30 * 86_400))
        XCTAssertEqual(early, 0)
        clock.advance(days: 1)
        let shredded = try await core.vault!.shredAddresses(before: clock.now().addingTimeInterval(-30 * 86_400))
        XCTAssertEqual(shredded, 1)
        let expired = try await admin.audit.userHistory(realm: "r", userID: id)
        XCTAssertEqual(expired.first?.clientIP, PersonalDataVault.expiredAddress)
        XCTAssertEqual(expired.first?.event, audit.first?.event, "the rest of the history stays")
        // Appends today still keep their address (today's key is a different subject).
        _ = try await core.userActors.actor(for: stream).execute(
            .disable(newStamp: "s2"), now: clock.now(), metadata: EventMetadata(actor: "admin:x", clientIP: "198.51.100.9"))
        let later = try await admin.audit.userHistory(realm: "r", userID: id)
        XCTAssertTrue(later.contains { $0.clientIP == "198.51.100.9" }, "\(later.map(\.clientIP))")
        await database.drop()
    }
}

/// The day of a client IP's key, by arithmetic, against Foundation's calendar.
final class AddressDayTests: XCTestCase {
    func testTheDayMatchesTheGregorianCalendarInUTC() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var generator = SystemRandomNumberGenerator()
        // Instants every 29.5 days from 1900 to 2200, random ones, and around a leap day.
        var instants: [Date] = stride(from: -2_208_988_800.0, to: 7_258_118_400.0, by: 86_400 * 29.5).map { Date(timeIntervalSince1970: $0) }
        instants += (0..<2000).map { _ in Date(timeIntervalSince1970: Double.random(in: -2_208_988_800...7_258_118_400, using: &generator)) }
        instants += [Date(timeIntervalSince1970: 951_782_400), Date(timeIntervalSince1970: 951_868_799), Date(timeIntervalSince1970: -1)]
        for instant in instants {
            let parts = calendar.dateComponents([.year, .month, .day], from: instant)
            let expected = String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
            XCTAssertEqual(PersonalDataVault.dayText(instant), expected, "\(instant.timeIntervalSince1970)")
        }
    }
}
