import CBOR
import XCTest

final class CBORDecoderTests: XCTestCase {
    private func decode(_ bytes: [UInt8]) throws -> CBOR { try CBORDecoder().decode(bytes) }

    private func assertRejects(_ bytes: [UInt8], _ expected: CBORError, line: UInt = #line) {
        XCTAssertThrowsError(try decode(bytes), line: line) { error in
            XCTAssertEqual(error as? CBORError, expected, line: line)
        }
    }

    func testIntegersAtEveryHeadWidth() throws {
        let cases: [([UInt8], CBOR)] = [
            ([0x00], .unsigned(0)), ([0x17], .unsigned(23)), ([0x18, 0x18], .unsigned(24)), ([0x18, 0xff], .unsigned(255)),
            ([0x19, 0x01, 0x00], .unsigned(256)), ([0x1a, 0x00, 0x01, 0x00, 0x00], .unsigned(65536)),
            ([0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], .unsigned(UInt64.max)), ([0x20], .int(-1)),
            ([0x38, 0x18], .int(-25)), ([0x39, 0x01, 0x00], .int(-257)),
        ]
        for (bytes, value) in cases {
            XCTAssertEqual(try decode(bytes), value, "\(bytes)")
            XCTAssertEqual(CBOREncoder.encode(value), bytes, "canonical encoding of \(value)")
        }
        XCTAssertEqual(CBOR.int(-257).intValue, -257)
        XCTAssertNil(CBOR.unsigned(UInt64.max).intValue)
    }

    func testStringsArraysMapsAndSimpleValuesRoundTrip() throws {
        let value = CBOR.map([
            .init(.text("fmt"), .text("none")), .init(.int(-2), .bytes([1, 2, 3])),
            .init(.text("list"), .array([.bool(true), .bool(false), .null, .undefined, .text("ü")])),
        ])
        XCTAssertEqual(try decode(CBOREncoder.encode(value)).mapValue?.count, 3)
        XCTAssertEqual(try decode(CBOREncoder.encode(value))[text: "list"], value[text: "list"])
        XCTAssertEqual(try decode(CBOREncoder.encode(value))[int: -2]?.bytesValue, [1, 2, 3])
    }

    func testEncoderSortsMapKeysCanonically() {
        // CTAP2: shorter encodings first, then bytewise: 1 (0x01) < -1 (0x20) < "a" < "bb".
        let value = CBOR.map([.init(.text("bb"), .null), .init(.text("a"), .null), .init(.int(-1), .null), .init(.int(1), .null)])
        XCTAssertEqual(CBOREncoder.encode(value), [0xa4, 0x01, 0xf6, 0x20, 0xf6, 0x61, 0x61, 0xf6, 0x62, 0x62, 0x62, 0xf6])
    }

    func testFloatsDecode() throws {
        XCTAssertEqual(try decode([0xf9, 0x3c, 0x00]), .float(1.0))
        XCTAssertEqual(try decode([0xf9, 0xc4, 0x00]), .float(-4.0))
        XCTAssertEqual(try decode([0xfa, 0x47, 0xc3, 0x50, 0x00]), .float(100000.0))
        XCTAssertEqual(try decode([0xfb, 0x3f, 0xf1, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a]), .float(1.1))
    }

    func testIndefiniteLengthsAreRefused() {
        for head: UInt8 in [0x5f, 0x7f, 0x9f, 0xbf] {
            assertRejects([head, 0xff], .indefiniteLength(offset: 0))
        }
        assertRejects([0xff], .indefiniteLength(offset: 0))
    }

    func testTagsAndReservedValuesAreRefused() {
        assertRejects([0xc0, 0x60], .tagNotAllowed(offset: 0))
        assertRejects([0xd8, 0x18, 0x40], .tagNotAllowed(offset: 0))
        assertRejects([0x1c], .reservedAdditionalInfo(offset: 0))
        assertRejects([0xf8, 0x20], .unsupportedSimpleValue(offset: 0, value: 0x20))
        assertRejects([0xf0], .unsupportedSimpleValue(offset: 0, value: 16))
    }

    func testDuplicateMapKeysAreRefused() {
        assertRejects([0xa2, 0x01, 0x00, 0x01, 0x01], .duplicateMapKey(offset: 3))
        assertRejects([0xa2, 0x61, 0x61, 0x00, 0x61, 0x61, 0x00], .duplicateMapKey(offset: 4))
    }

    func testTrailingBytesAreRefusedButReportedByPrefixDecoding() throws {
        assertRejects([0x01, 0x02], .trailingBytes(count: 1))
        let (item, consumed) = try CBORDecoder().decodePrefix([0x82, 0x01, 0x02, 0xff, 0xee])
        XCTAssertEqual(item, .array([.unsigned(1), .unsigned(2)]))
        XCTAssertEqual(consumed, 3)
    }

    func testEveryTruncationOfAValidItemIsRefused() {
        let valid = CBOREncoder.encode(.map([.init(.text("key"), .array([.bytes([1, 2, 3, 4]), .int(-300), .text("value")]))]))
        for length in 0..<valid.count {
            XCTAssertThrowsError(try decode(Array(valid.prefix(length))), "prefix \(length)") { error in
                switch error as? CBORError {
                case .truncated, .lengthTooLarge: break  // a declared length that outruns the input
                default: XCTFail("prefix \(length): \(error)")
                }
            }
        }
    }

    func testHugeDeclaredLengthsFailWithoutAllocating() {
        assertRejects([0x5b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], .lengthTooLarge(offset: 0))
        assertRejects([0x9b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], .lengthTooLarge(offset: 0))
        assertRejects([0xba, 0x00, 0x01, 0x00, 0x00, 0x00], .lengthTooLarge(offset: 0))
    }

    func testDepthAndItemLimits() {
        let deep = Array(repeating: UInt8(0x81), count: 17) + [0x00]
        assertRejects(deep, .depthExceeded(limit: 16))
        let shallow = Array(repeating: UInt8(0x81), count: 16) + [0x00]
        XCTAssertNoThrow(try decode(shallow))
        let many = CBOREncoder.encode(.array(Array(repeating: .unsigned(1), count: 5000)))
        XCTAssertThrowsError(try decode(many)) { error in XCTAssertEqual(error as? CBORError, .tooManyItems(limit: 4096)) }
    }

    func testInvalidUTF8TextIsRefused() {
        assertRejects([0x62, 0xc3, 0x28], .invalidUTF8(offset: 0))
    }
}
