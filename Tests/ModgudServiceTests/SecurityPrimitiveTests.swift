import Foundation
@testable import ModgudService
import XCTest

final class TOTPTests: XCTestCase {
    /// RFC 6238 Appendix B, SHA-1, 8 digits, secret "12345678901234567890".
    func testRFC6238Vectors() {
        let totp = TOTP(secret: Array("12345678901234567890".utf8), digits: 8)
        let vectors: [(TimeInterval, String)] = [
            (59, "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"), (1_234_567_890, "89005924"),
            (2_000_000_000, "69279037"), (20_000_000_000, "65353130"),
        ]
        for (time, code) in vectors {
            XCTAssertEqual(totp.code(counter: totp.counter(at: Date(timeIntervalSince1970: time))), code, "T=\(time)")
        }
    }

    func testMatchAcceptsOneStepEitherSideOnly() {
        let totp = TOTP(secret: Array("12345678901234567890".utf8))
        let now = Date(timeIntervalSince1970: 1_800_000_015)
        let counter = totp.counter(at: now)
        XCTAssertEqual(totp.match(totp.code(counter: counter), at: now), counter)
        XCTAssertEqual(totp.match(totp.code(counter: counter - 1), at: now), counter - 1)
        XCTAssertEqual(totp.match(totp.code(counter: counter + 1), at: now), counter + 1)
        XCTAssertNil(totp.match(totp.code(counter: counter + 2), at: now))
        XCTAssertNil(totp.match(totp.code(counter: counter - 2), at: now))
        XCTAssertNil(totp.match("12345", at: now))
        XCTAssertNil(totp.match("12a456", at: now))
    }

    func testProvisioningURIUsesBase32() {
        let uri = TOTP(secret: Array("12345678901234567890".utf8)).provisioningURI(issuer: "Modgud dev", account: "ada@example.com")
        XCTAssertTrue(uri.hasPrefix("otpauth://totp/Modgud%20dev:ada@example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Modgud%20dev"), uri)
        XCTAssertEqual(TOTP.generateSecret().count, 20)
    }
}

final class OneTimeCodeTests: XCTestCase {
    /// A generator that replays fixed draws.
    struct Replay: RandomNumberGenerator {
        var values: [UInt64]
        mutating func next() -> UInt64 { values.removeFirst() }
    }

    func testDrawsAboveTheLastFullRangeAreRedrawnSoCodesAreUniform() {
        let limit = UInt32.max - UInt32.max % 1_000_000
        // The first draw lies in the biased tail and must be rejected; the second gives 000042.
        var generator = Replay(values: [UInt64(limit), UInt64(limit) + 5, 42])
        XCTAssertEqual(OneTimeCode.generate(using: &generator), "000042")
        XCTAssertTrue(generator.values.isEmpty, "both tail draws were rejected")
    }

    func testCodesAreSixDigitsAndSpreadOverTheRange() {
        var firstDigits = [Int](repeating: 0, count: 10)
        for _ in 0..<20_000 {
            let code = OneTimeCode.generate()
            XCTAssertEqual(code.count, 6)
            firstDigits[Int(String(code.first!))!] += 1
        }
        // Each leading digit should get about 2,000; a biased generator skews this far more.
        XCTAssertTrue(firstDigits.allSatisfy { (1700...2300).contains($0) }, "\(firstDigits)")
    }

    func testHashesArePepperedAndBoundToTheAddress() {
        let codes = OneTimeCode(pepper: Array(repeating: 1, count: 32))
        let other = OneTimeCode(pepper: Array(repeating: 2, count: 32))
        XCTAssertEqual(codes.hash("123456", for: "a@example.com"), codes.hash("123456", for: "a@example.com"))
        XCTAssertNotEqual(codes.hash("123456", for: "a@example.com"), codes.hash("123456", for: "b@example.com"))
        XCTAssertNotEqual(codes.hash("123456", for: "a@example.com"), other.hash("123456", for: "a@example.com"))
        XCTAssertFalse(codes.hash("123456", for: "a@example.com").contains("123456"))
    }
}
