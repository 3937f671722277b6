import EventStorePostgres
import Foundation
import ModgudSchema
import PQ
import PostgresTestSupport
import XCTest

final class MigratorTests: XCTestCase {
    var database: TestDatabase!

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 4)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    func testMigrateIsIdempotentAndRecordsWhatRan() async throws {
        // The test database was created from a migrated template: everything is applied already.
        let shipped = ModgudSchema.migrations.map { Migrator.Migration(name: $0.name, sql: $0.sql) }
        let again = try await Migrator(pool: database.pool, migrations: shipped).migrate()
        XCTAssertEqual(again.applied, [])
        XCTAssertEqual(again.alreadyApplied, shipped.map(\.name))

        let extra = shipped + [Migrator.Migration(name: "9999_extra.sql", sql: "CREATE TABLE extra (id int); CREATE INDEX extra_id ON extra (id);")]
        let added = try await Migrator(pool: database.pool, migrations: extra).migrate()
        XCTAssertEqual(added.applied, ["9999_extra.sql"])
        let recorded = try await database.pool.query("SELECT name FROM schema_migrations ORDER BY name").rows.map { try $0.decode(String.self, at: 0) }
        XCTAssertEqual(recorded, extra.map(\.name))

        let older = try await Migrator(pool: database.pool, migrations: shipped).migrate()
        XCTAssertEqual(older.unknown, ["9999_extra.sql"], "a database ahead of the binary is reported")
    }

    func testChangedAppliedMigrationIsRefused() async throws {
        var changed = ModgudSchema.migrations.map { Migrator.Migration(name: $0.name, sql: $0.sql) }
        changed[0].sql += "\n-- edited after release\n"
        do {
            _ = try await Migrator(pool: database.pool, migrations: changed).migrate()
            XCTFail("an edited migration must be refused")
        } catch let error as MigrationError {
            XCTAssertEqual(error, .changed(name: changed[0].name))
        }
    }

    func testFailingMigrationLeavesNoTraceAndIsNotRecorded() async throws {
        let broken = Migrator.Migration(name: "9998_broken.sql", sql: "CREATE TABLE half (id int); SELECT no_such_function();")
        let shipped = ModgudSchema.migrations.map { Migrator.Migration(name: $0.name, sql: $0.sql) }
        do {
            _ = try await Migrator(pool: database.pool, migrations: shipped + [broken]).migrate()
            XCTFail("the broken migration must fail")
        } catch let error as PQError {
            XCTAssertEqual(error.sqlState, "42883")
        }
        let tables = try await database.pool.count("SELECT count(*) FROM pg_tables WHERE tablename = 'half'")
        let recorded = try await database.pool.count("SELECT count(*) FROM schema_migrations WHERE name = '9998_broken.sql'")
        XCTAssertEqual(tables, 0)
        XCTAssertEqual(recorded, 0)
    }

    func testEmbeddedMigrationsMatchTheSchemaFolder() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("schema")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".sql") }.sorted()
        XCTAssertEqual(ModgudSchema.migrations.map(\.name), files, "every schema/*.sql file is listed in Schema.swift, in order")
        for migration in ModgudSchema.migrations {
            let onDisk = try String(contentsOf: folder.appendingPathComponent(migration.name), encoding: .utf8)
            XCTAssertEqual(migration.sql, onDisk, "\(migration.name) is embedded as written")
        }
    }
}
