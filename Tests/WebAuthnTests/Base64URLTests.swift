import WebAuthn
import XCTest

final class Base64URLTests: XCTestCase {
    func testRoundTripsEveryLength() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64URL.encode(bytes)
            XCTAssertFalse(text.contains("=") || text.contains("+") || text.contains("/"))
            XCTAssertEqual(Base64URL.decode(text), bytes)
        }
    }

    func testAcceptsPaddingAndTheStandardAlphabet() {
        XCTAssertEqual(Base64URL.decode("-_8"), [0xfb, 0xff])
        XCTAssertEqual(Base64URL.decode("+/8="), [0xfb, 0xff])
        XCTAssertEqual(Base64URL.decode("YQ=="), [0x61])
        XCTAssertEqual(Base64URL.decode("YQ"), [0x61])
    }

    func testRejectsWhatNoClientSends() {
        for bad in ["Y", "YQ=a", "Y===", "YQ===", "ab$d", "a b", "YR", "YWJ"] {
            XCTAssertNil(Base64URL.decode(bad), bad)
        }
    }
}
