import Foundation
import XCTest

/// Issue 68, item 3: the round-trip checks (a token request's rate-limit count and DPoP jti
/// claim, issue 49) are a value internal to the service, carried by the request into the
/// service's first read. No grant, table, `AggregateActor` or store names them.
extension ArchitectureFitnessTests {
    func testTheRoundTripChecksAreInternalToTheService() throws {
        let files = try SQLHomeTests.files()
        func named(_ word: String, in prefix: String, except allowed: Set<String> = []) -> [String] {
            files.filter { $0.path.hasPrefix(prefix) && !allowed.contains($0.path) && $0.code.contains(word) }.map(\.path)
        }
        // HTTP builds them once, where it hands the grant its request; grants never touch them.
        XCTAssertEqual(named("GrantChecks", in: "ModgudHTTP/", except: ["ModgudHTTP/Grants/TokenGrant.swift"]), [])
        for word in [".checks", "dpopClaim", "uncounted", "rateLimiter.run", "rateLimiter.send", "RateLimitCheck"] {
            XCTAssertEqual(named(word, in: "ModgudHTTP/Grants/", except: ["ModgudHTTP/Grants/TokenGrant.swift"]), [], word)
        }
        // Nothing below the service's own reads knows them.
        XCTAssertEqual(named("GrantChecks", in: "ModgudService/AggregateActor"), [])
        XCTAssertEqual(named("GrantChecks", in: "ModgudService/Tables/"), [])
        XCTAssertEqual(named("GrantChecks", in: "EventStore"), [])
        XCTAssertEqual(named("GrantChecks", in: "ModgudService/RateLimit/"), [])
        // Outside the service a caller can build the value and nothing more.
        let checks = try XCTUnwrap(files.first { $0.path == "ModgudService/OAuth/GrantChecks.swift" }).code
        let publicLines = checks.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("public ") }
        XCTAssertEqual(publicLines.count, 3, "\(publicLines)")
        XCTAssertEqual(publicLines.filter { $0.hasPrefix("public struct GrantChecks") || $0.hasPrefix("public init(") || $0.hasPrefix("public static let none") }.count, 3)
        // The check looks where the code is.
        XCTAssertFalse(named("GrantChecks", in: "ModgudService/").isEmpty)
        XCTAssertFalse(named("dpopClaim", in: "ModgudHTTP/Grants/").isEmpty)
    }
}
