import XCTest

@testable import ModgudHTTP

/// Issue 44: the grammar every JSON body passes before decoding (`JSONSyntax`), and what
/// `StrictJSON` makes of its refusals. The first case is `ops/fuzz requests`' finding
/// (Tests/FuzzRegressions/requests/duplicate-member-hides-a-bad-escape).
final class JSONSyntaxTests: XCTestCase {
    struct Body: Decodable {
        var Code: String?
    }

    func refusal(_ text: String) -> JSONSyntax.Violation? {
        do {
            try JSONSyntax.check(Array(text.utf8))
            return nil
        } catch {
            return error
        }
    }

    func testADuplicateMemberIsRefusedByNameEvenWhenFoundationWouldReadTheFirst() throws {
        XCTAssertEqual(refusal(#"{"Code":null,"Code":"\ud"}"#), .duplicateMember("Code"))
        XCTAssertEqual(refusal(#"{"Code":"1","Code":"2"}"#), .duplicateMember("Code"))
        XCTAssertEqual(refusal(#"{"Code":"1","C\u006fde":"2"}"#), .duplicateMember("Code"), "names compare decoded")
        XCTAssertEqual(refusal(#"{"a":{"x":1},"b":{"x":2}}"#), nil, "each object has its own names")
        XCTAssertThrowsError(try StrictJSON.decode(Body.self, from: Array(#"{"Code":"1","Code":"2"}"#.utf8), allowed: ["Code"])) { error in
            XCTAssertEqual(error as? StrictJSON.Failure, .invalid("Code is given twice."))
        }
        XCTAssertThrowsError(try StrictJSON.decode(Body.self, from: Array(#"{"Code":null,"Code":"\ud"}"#.utf8), allowed: ["Code"])) { error in
            XCTAssertEqual(error as? StrictJSON.Failure, .invalid("Code is given twice."))
        }
        XCTAssertThrowsError(try StrictJSON.decode(Body.self, from: Array(#"{"Code":"\ud"}"#.utf8), allowed: ["Code"])) { error in
            XCTAssertEqual(error as? StrictJSON.Failure, .malformed)
        }
    }

    func testTheGrammar() {
        for valid in [
            #"{}"#, #"[]"#, #" {"a" : [1, -0.5e+3, 0, true, false, null, "x\n\u00e9\ud83d\ude00"]} "#, #""just a string""#, "12", #"{"a":{}}"#,
        ] {
            XCTAssertNil(refusal(valid), valid)
        }
        for invalid in [
            "", " ", "{", #"{"a"}"#, #"{"a":1,}"#, "[1,]", "01", "1.", "-", "1e", "+1", ".5", "tru", "nul", #"{"a":1}x"#, #"{'a':1}"#,
            "\"\u{01}\"", #""\x""#, #""\u12""#, #""\ud800""#, #""\udc00""#, #""\ud800\u0041""#, "[1 2]", #"{"a" 1}"#, "NaN",
        ] {
            XCTAssertEqual(refusal(invalid), .malformed, invalid)
        }
        XCTAssertEqual(refusal(#"""# + "\u{00}" + #"""#), .malformed, "a raw NUL")
        XCTAssertNil(try? JSONSyntax.check([0x22, 0xC3, 0x28, 0x22]), "invalid UTF-8")
    }

    func testNestingIsBounded() {
        let deep = String(repeating: "[", count: JSONSyntax.maxDepth + 1) + String(repeating: "]", count: JSONSyntax.maxDepth + 1)
        let shallow = String(repeating: "[", count: JSONSyntax.maxDepth) + String(repeating: "]", count: JSONSyntax.maxDepth)
        XCTAssertEqual(refusal(deep), .malformed)
        XCTAssertNil(refusal(shallow))
        let hostile = String(repeating: "[", count: 100_000)
        XCTAssertEqual(refusal(hostile), .malformed, "no stack overflow")
    }
}
