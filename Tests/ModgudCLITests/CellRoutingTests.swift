import AsyncTestSupport
import Foundation
import MailTestSupport
import ModgudService
import PQ
import PostgresTestSupport
import XCTest

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Issue 71, test (c): one `modgud serve` with `MODGUD_DIRECTORY_URL` serves two cells (two
/// databases, each its own pool and schema) and routes each request by its host; the
/// directory's placement decides between two cells that both hold a realm, and a flip is
/// followed without a restart. Played as an operator would: `modgud cell add/place/list`,
/// `modgud realm create --database-url <cell>`, and requests over a real socket.
final class CellRoutingTests: CellTestCase {
    func testAnInstanceRoutesByHostAcrossCellsAndFollowsAFlip() async throws {
        for _ in 0..<3 { databases.append(try await TestDatabase.create(maxConnections: 4)) }
        let (cellA, cellB, directory) = (CLIRunner(databaseURL: databases[0].url), CLIRunner(databaseURL: databases[1].url), databases[2].url)
        // `red` (host localhost) in both cells, as mid-move; `blue` (host 127.0.0.1) in cell b only.
        for cell in [cellA, cellB] {
            try cell.ok(["realm", "create", "red", "--host", "localhost"])
            try cell.ok(["realm", "rotate-key", "red"])
        }
        let operator_ = CLIRunner(databaseURL: "postgresql://nowhere.invalid/none")
        try operator_.ok(["cell", "add", "a", "--url", databases[0].url, "--directory-url", directory])
        try operator_.ok(["cell", "add", "b", "--url", databases[1].url, "--directory-url", directory])
        let unplaced = try operator_.fails(["cell", "place", "red", "--cell", "c", "--directory-url", directory])
        XCTAssertTrue(unplaced.contains("No cell is named c"), unplaced)
        try operator_.ok(["cell", "place", "red", "--cell", "a", "--directory-url", directory])

        let port = try SMTPSink.freePort()
        server = try operator_.launch(
            ["serve"],
            environment: [
                "MODGUD_DIRECTORY_URL": directory, "MODGUD_PORT": "\(port)", "MODGUD_ISSUER_SCHEME": "http", "MODGUD_MAIL_TRANSPORT": "console",
            ])
        try await LoginCommandTests.waitUntilReady("http://localhost:\(port)")

        // Placed in a: the keys a signs with, and the issuer of the host.
        let kidsA = try await kids(in: databases[0].pool), kidsB = try await kids(in: databases[1].pool)
        XCTAssertNotEqual(kidsA, kidsB, "each cell made its own key")
        let red = try await Self.json("http://localhost:\(port)/.well-known/openid-configuration")
        XCTAssertEqual(red.status, 200)
        XCTAssertEqual(red.body["issuer"] as? String, "http://localhost:\(port)")
        let servedA = try await Self.servedKids("http://localhost:\(port)")
        XCTAssertEqual(servedA, kidsA)

        // The instance's readiness names every cell, on any host (a balancer sends none).
        let ready = try await Self.json("http://127.0.0.1:\(port)/health/ready")
        XCTAssertEqual(ready.status, 200)
        XCTAssertEqual(ready.body["checks"] as? [String: String], ["draining": "ok", "cell.a": "ok", "cell.b": "ok"])

        // A host no cell knows: the home cell (a) answers that no realm serves it.
        let unknown = try await Self.json("http://127.0.0.1:\(port)/.well-known/openid-configuration")
        XCTAssertEqual(unknown.status, 404)
        XCTAssertEqual(unknown.body["title"] as? String, "Realm.NotFound")

        // `blue` created in b while the instance runs, never placed: held by one cell, served from it.
        try cellB.ok(["realm", "create", "blue", "--host", "127.0.0.1"])
        try cellB.ok(["realm", "rotate-key", "blue"])
        let blueKids = try await kids(in: databases[1].pool, realm: "blue")
        try await Eventually.wait("blue served from cell b") { (try? await Self.servedKids("http://127.0.0.1:\(port)")) == blueKids }

        // The flip: red placed in b; the instance follows the directory without a restart.
        try operator_.ok(["cell", "place", "red", "--cell", "b", "--directory-url", directory])
        try await Eventually.wait("red served from cell b after the flip") { (try? await Self.servedKids("http://localhost:\(port)")) == kidsB }

        let listed = try operator_.ok(["cell", "list", "--directory-url", directory])
        let lines = listed.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        XCTAssertEqual(lines.first, ["CELL", "HEALTH", "HELD", "PLACED", "URL"])
        XCTAssertEqual(lines.dropFirst().map { Array($0.prefix(4)) }, [["a", "primary", "red", "-"], ["b", "primary", "blue,red", "red"]])
        try await operatorViews(cellA: cellA, cellB: cellB, directory: directory)
    }

    /// Test (d): the operator's realm list and a person's history across cells, merged; a cell
    /// that does not answer is named and fails the command, the others' answers still printed.
    func operatorViews(cellA: CLIRunner, cellB: CLIRunner, directory: String) async throws {
        try cellA.ok(["user", "create", "red", "ada@example.com"])
        try cellB.ok(["user", "create", "blue", "ada@example.com"])
        let operator_ = CLIRunner(databaseURL: "postgresql://nowhere.invalid/none")
        let realms = try operator_.ok(["cell", "realms", "--directory-url", directory]).split(separator: "\n").map(String.init)
        XCTAssertEqual(
            realms, ["REALM\tCELL\tPLACED\tHOSTS", "blue\tb\tunplaced\t127.0.0.1", "red\ta\tin b\tlocalhost", "red\tb\there\tlocalhost"])
        let history = try operator_.ok(["cell", "audit", "ada@example.com", "--directory-url", directory])
        let registered = history.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }.filter { $0.count > 3 && $0[3] == "user.registered" }
        XCTAssertEqual(Set(registered.map { $0[1] + "/" + $0[2] }), ["a/red", "b/blue"], history)

        // A third cell whose database is gone.
        let gone = try await TestDatabase.create(maxConnections: 2)
        try operator_.ok(["cell", "add", "c", "--url", gone.url, "--directory-url", directory])
        await gone.drop()
        let partial = try operator_.run(["cell", "realms", "--directory-url", directory])
        XCTAssertEqual(partial.status, 1)
        XCTAssertTrue(partial.error.contains("cell c did not answer"), partial.error)
        XCTAssertTrue(partial.output.contains("blue\tb\tunplaced"), "the other cells' answers are printed: \(partial.output)")
        let health = try operator_.ok(["cell", "list", "--directory-url", directory])
        XCTAssertTrue(health.contains("c\tunreachable\t?\t-"), health)
    }

    /// One cell down when an instance starts: it serves the others, and says which cell is not ready.
    func testAnInstanceStartsAndServesItsCellsWhileAnotherCellIsDown() async throws {
        for _ in 0..<2 { databases.append(try await TestDatabase.create(maxConnections: 4)) }
        let (cellA, directory) = (CLIRunner(databaseURL: databases[0].url), databases[1].url)
        try cellA.ok(["realm", "create", "red", "--host", "localhost"])
        try cellA.ok(["realm", "rotate-key", "red"])
        let operator_ = CLIRunner(databaseURL: "postgresql://nowhere.invalid/none")
        try operator_.ok(["cell", "add", "a", "--url", databases[0].url, "--directory-url", directory])
        // Cell b's primary is down: nothing listens at its URL (added directly: `cell add` migrates first).
        try await CellDirectory.addCell(name: "b", databaseURL: "postgresql://postgres@127.0.0.1:1/modgud", pool: databases[1].pool)

        let port = try SMTPSink.freePort()
        server = try operator_.launch(
            ["serve"],
            environment: [
                "MODGUD_DIRECTORY_URL": directory, "MODGUD_PORT": "\(port)", "MODGUD_ISSUER_SCHEME": "http", "MODGUD_MAIL_TRANSPORT": "console",
            ])
        try await LoginCommandTests.waitUntilReady("http://localhost:\(port)")
        let ready = try await Self.json("http://localhost:\(port)/health/ready")
        let checks = try XCTUnwrap(ready.body["checks"] as? [String: String])
        XCTAssertEqual(checks["cell.a"], "ok")
        XCTAssertTrue(checks["cell.b"]?.hasPrefix("database: ") == true, "\(checks)")
        let served = try await Self.servedKids("http://localhost:\(port)")
        let held = try await kids(in: databases[0].pool)
        XCTAssertEqual(served, held, "realm red served from cell a while cell b is down")
    }

    /// The kids of a realm's signing keys, as the cell's database holds them.
    func kids(in pool: PQPool, realm: String = "red") async throws -> Set<String> {
        Set(try await pool.query("SELECT kid FROM signing_keys WHERE realm_id = \(realm)").rows.map { try $0.decode(String.self, at: 0) })
    }

    /// The kids the server publishes for the realm of `base`'s host.
    static func servedKids(_ base: String) async throws -> Set<String> {
        let jwks = try await json(base + "/.well-known/jwks.json")
        let keys = try XCTUnwrap(jwks.body["keys"] as? [[String: Any]])
        return Set(keys.compactMap { $0["kid"] as? String })
    }

    static func json(_ url: String) async throws -> (status: Int, body: [String: Any]) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        let body = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, body)
    }
}
