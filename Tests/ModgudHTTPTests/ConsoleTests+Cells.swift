import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 71, item 6: the health page lists the cells with their health when the instance serves
/// cells: each probed as `modgud cell list` does (a cell whose database answers, one that does not).
extension ConsoleTests {
    func testTheHealthPageShowsEveryCellWithItsHealth() async throws {
        harness = try await EmailSignInHarness()
        let harness = harness!
        _ = try await harness.core.console(settings: .init()).addOperator(email: Self.operatorEmail, rpID: "localhost", metadata: .init(actor: "test"))
        let map = CellMap(
            cells: [.init(name: "home", databaseURL: harness.database.url), .init(name: "gone", databaseURL: "postgresql://postgres:secret@127.0.0.1:1/none")],
            placements: ["dev": .init(cell: "home")])
        var console = ConsoleConfiguration()
        console.cells = { await CellHealth.statuses(of: map) }
        let app = buildApplication(core: harness.core, configuration: harness.configuration, console: console, logger: harness.logs.logger("console"))
        try await app.test(.router) { client in
            let session = try await Self.session(client, harness)
            let page = try await H.call(client, .get, "/console", "", headers: session.headers).body
            XCTAssertTrue(page.contains("<h2>Cells</h2>"), page)
            XCTAssertTrue(page.contains(#"<tr><td>home</td><td class="ok">primary</td><td>dev, operators</td><td>dev</td>"#), page)
            XCTAssertTrue(page.contains(#"<tr><td>gone</td><td class="bad">unreachable</td><td>?</td><td></td><td><code>postgresql://postgres:***@127.0.0.1:1/none</code>"#), page)
            XCTAssertFalse(page.contains("secret"), "no password on the page")
        }
    }

    func testWithoutCellsTheHealthPageHasNoCellsSection() async throws {
        let app = try await start()
        let harness = harness!
        try await app.test(.router) { client in
            let session = try await Self.session(client, harness)
            let page = try await H.call(client, .get, "/console", "", headers: session.headers).body
            XCTAssertTrue(page.contains("<h2>Projections</h2>"), page)
            XCTAssertFalse(page.contains("<h2>Cells</h2>"))
        }
    }
}
