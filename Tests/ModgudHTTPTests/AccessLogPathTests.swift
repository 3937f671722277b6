@testable import ModgudHTTP
import XCTest

/// The access log writes no address (issue 13); the path check is a byte scan since issue 27.
final class AccessLogPathTests: XCTestCase {
    func testASegmentHoldingAnAddressIsReplacedAndOthersAreKept() {
        XCTAssertEqual(RequestObservationMiddleware.loggedPath("/admin/realms/dev/users/ada@example.com/erase"), "/admin/realms/dev/users/[address]/erase")
        XCTAssertEqual(RequestObservationMiddleware.loggedPath("/admin/realms/dev/users/ada%40example.com"), "/admin/realms/dev/users/[address]")
        XCTAssertEqual(RequestObservationMiddleware.loggedPath("/x/%%40y/z"), "/x/[address]/z", "a percent before the escape")
        XCTAssertEqual(RequestObservationMiddleware.loggedPath("/connect/token"), "/connect/token")
        XCTAssertEqual(RequestObservationMiddleware.loggedPath("/a/%4/0/%20%34%30"), "/a/%4/0/%20%34%30", "no escape of @ in it")
    }
}
