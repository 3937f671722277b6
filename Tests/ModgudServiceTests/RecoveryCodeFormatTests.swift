@testable import ModgudService
import XCTest

/// Issue 46: recovery codes as a person reads and retypes them, and as they are stored.
final class RecoveryCodeFormatTests: XCTestCase {
    func testASetIsTenDistinctCodesWithAFreshSalt() throws {
        let (codes, salt) = RecoveryCode.generateSet()
        XCTAssertEqual(codes.count, 10)
        XCTAssertEqual(Set(codes).count, 10)
        XCTAssertEqual(salt.count, 16)
        XCTAssertNotEqual(RecoveryCode.generateSet().salt, salt)
        for code in codes { XCTAssertEqual(RecoveryCode.normalize(code), code.replacingOccurrences(of: "-", with: "")) }
    }

    func testRetypingIsForgivingAndAnythingElseIsNoCode() {
        XCTAssertEqual(RecoveryCode.normalize("abcde-fghjk"), "ABCDEFGHJK")
        XCTAssertEqual(RecoveryCode.normalize(" o1iL0 23456 "), "0111023456", "O reads as 0, I and L as 1")
        XCTAssertNil(RecoveryCode.normalize("ABCDE-FGHJ"), "nine symbols")
        XCTAssertNil(RecoveryCode.normalize("ABCDE-FGHJU"), "U is not in Crockford's alphabet")
        XCTAssertNil(RecoveryCode.normalize("ABCDE_FGHJK"))
        XCTAssertNil(RecoveryCode.normalize(String(repeating: "-", count: 100) + "ABCDEFGHJK"), "bounded input")
    }

    func testTheStoredFormIsASaltedSlowHashOfTheCanonicalCode() throws {
        let salt = [UInt8](repeating: 1, count: 16)
        let hash = try RecoveryCode.hash("ABCDE-FGHJK", salt: salt)
        XCTAssertEqual(hash.count, 64)
        XCTAssertEqual(try RecoveryCode.hash("abcdefghjk", salt: salt), hash, "typed forms hash alike")
        XCTAssertNotEqual(try RecoveryCode.hash("ABCDE-FGHJK", salt: [UInt8](repeating: 2, count: 16)), hash, "the salt matters")
        XCTAssertFalse(hash.contains("ABCDE"))
    }
}
