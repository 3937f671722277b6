@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

/// Issue 71, the live move: every table of a cell is classified (a new table cannot be
/// forgotten by a move), and the pure parts of the move's plan.
final class RealmMoveTablesTests: XCTestCase {
    func testEveryTableOfAMigratedCellIsMovedDerivedCopiedOrNamedAsNotMoved() async throws {
        let database = try await TestDatabase.create(maxConnections: 2)
        let columns = try await database.pool.query(
            "SELECT table_name::text, column_name::text FROM information_schema.columns WHERE table_schema = 'public'"
        ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1)) }
        await database.drop()
        let tables = Set(columns.map(\.0))
        let classified = RealmMoveTables.moved + RealmMoveTables.derived + RealmMoveTables.copied.map(\.name) + RealmMoveTables.notMoved
        XCTAssertEqual(tables.subtracting(classified).sorted(), [], "tables no list names: classify them in RealmMoveTables")
        XCTAssertEqual(Set(classified).subtracting(tables).sorted(), [], "listed tables the schema does not have")
        XCTAssertEqual(classified.count, Set(classified).count, "a table in two lists")
        // Retirement deletes by the realm's column: every realm table has the column it names.
        for table in RealmRetirement.realmTables {
            guard case .column(let column) = table.owner else { continue }
            XCTAssertTrue(columns.contains { $0 == (table.name, column) }, "\(table.name) has no column \(column)")
        }
        for (table, column) in RealmMoveTables.fenced {
            XCTAssertTrue(columns.contains { $0 == (table, column) }, "fenced \(table) has no column \(column)")
        }
    }

    func testRunsSplitTheSourceOrderWhereverPositionsFall() {
        let events = [(10, 1), (12, 1), (11, 2), (13, 2), (14, 3)].map { RealmMoveEvent(position: Int64($0.0), sourceTransaction: UInt64($0.1)) }
        XCTAssertEqual(RealmMoveEvent.runs(events).map { $0.map(\.position) }, [[10, 12], [11, 13, 14]])
        XCTAssertEqual(RealmMoveEvent.runs([]).count, 0)
    }

    func testTheTargetsNextPositionsRunToTheEndOfItsOwnRange() {
        let range: Int64 = 1 << 40
        XCTAssertEqual(RealmMove.upcoming(targetLast: 5_000), 5_001..<range, "cell 0: moved positions of cell 1 are outside")
        XCTAssertEqual(RealmMove.upcoming(targetLast: range + 7), (range + 8)..<(2 * range), "cell 1 up to cell 2's range")
        XCTAssertEqual(RealmMove.upcoming(targetLast: 0), 1..<range, "an empty cell")
    }

    func testTheStagingDatabaseIsNamedInEitherFormOfAConnectionString() {
        XCTAssertEqual(
            PQConfiguration.replacingDatabase(in: "postgresql://postgres@127.0.0.1:5432/modgud?sslmode=disable", with: "m"),
            "postgresql://postgres@127.0.0.1:5432/m?sslmode=disable")
        XCTAssertEqual(PQConfiguration.replacingDatabase(in: "postgresql://h:1", with: "m"), "postgresql://h:1/m")
        XCTAssertEqual(PQConfiguration.replacingDatabase(in: "host=h dbname=modgud", with: "m"), "host=h dbname=modgud dbname=m")
    }

    func testAMovesNamesAreSafeIdentifiersAndDifferForRealmsThatLookAlike() {
        let a = RealmMove.names(for: "Acme-EU"), b = RealmMove.names(for: "acme_eu")
        XCTAssertTrue(a.replication.hasPrefix("modgud_move_acme_eu_"))
        XCTAssertNotEqual(a.replication, b.replication)
        XCTAssertLessThanOrEqual(RealmMove.names(for: String(repeating: "x", count: 200)).replication.utf8.count, 63, "NAMEDATALEN")
    }
}
