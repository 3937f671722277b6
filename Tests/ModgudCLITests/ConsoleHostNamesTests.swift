import ModgudHTTP
import XCTest

@testable import ModgudCLI

/// Issue 67: `MODGUD_CONSOLE_HOSTNAMES` unset means the default check (the realms' hosts and
/// the console's own), `*` the explicit opt-out, and a list those names only.
final class ConsoleHostNamesTests: XCTestCase {
    func testUnsetIsTheDefaultCheckStarOptsOutAndAListIsUsedAsIs() throws {
        XCTAssertEqual(try ModgudConfiguration.fromEnvironment([:]).console.hostnames, .realmsAndOwn)
        XCTAssertEqual(try ModgudConfiguration.consoleHostNames(""), .realmsAndOwn)
        XCTAssertEqual(try ModgudConfiguration.consoleHostNames(" , "), .realmsAndOwn)
        XCTAssertEqual(try ModgudConfiguration.consoleHostNames("*"), .any)
        XCTAssertEqual(try ModgudConfiguration.consoleHostNames(" * "), .any)
        XCTAssertEqual(
            try ModgudConfiguration.consoleHostNames("Console.Example.com, [::1],admin.example.com"),
            .only(["console.example.com", "::1", "admin.example.com"]))
        XCTAssertThrowsError(try ModgudConfiguration.consoleHostNames("*,console.example.com"), "* stands alone")
    }
}
