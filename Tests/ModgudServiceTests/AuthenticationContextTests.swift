import ModgudService
import XCTest

/// Issue 46: the documented mapping of sign-in methods to RFC 8176 `amr` and Modgud's `acr`,
/// and how `acr_values` compares (docs/api.md, "Tokens").
final class AuthenticationContextTests: XCTestCase {
    func testEachMethodMapsToItsDocumentedAMRAndACR() {
        let table: [(String, [String], String)] = [
            ("email code or link", AuthenticationContext.emailAMR(totp: false), "urn:modgud:acr:single-factor"),
            ("with TOTP", AuthenticationContext.emailAMR(totp: true), "urn:modgud:acr:mfa"),
            ("device-bound passkey", AuthenticationContext.passkeyAMR(backupEligible: false), "urn:modgud:acr:mfa"),
            ("synced passkey", AuthenticationContext.passkeyAMR(backupEligible: true), "urn:modgud:acr:mfa"),
        ]
        XCTAssertEqual(table.map(\.1), [["otp"], ["otp", "mfa"], ["hwk", "mfa"], ["swk", "mfa"]])
        for (method, amr, acr) in table { XCTAssertEqual(AuthenticationContext.acr(amr: amr), acr, method) }
        XCTAssertEqual(AuthenticationContext.recoveryAMR, ["otp"])
        XCTAssertEqual(AuthenticationContext.supported, ["urn:modgud:acr:recovery", "urn:modgud:acr:single-factor", "urn:modgud:acr:mfa"])
    }

    func testACRValuesAreMetByTheWeakestKnownValueOrStronger() {
        let (recovery, single, mfa) = (AuthenticationContext.recovery, AuthenticationContext.singleFactor, AuthenticationContext.mfa)
        XCTAssertTrue(AuthenticationContext.satisfies(single, acrValues: []))
        XCTAssertTrue(AuthenticationContext.satisfies(single, acrValues: ["urn:example:gold"]), "unknown values are voluntary")
        XCTAssertTrue(AuthenticationContext.satisfies(mfa, acrValues: [single]))
        XCTAssertFalse(AuthenticationContext.satisfies(single, acrValues: [mfa]))
        XCTAssertTrue(AuthenticationContext.satisfies(single, acrValues: [mfa, single]), "any one of them")
        XCTAssertFalse(AuthenticationContext.satisfies(recovery, acrValues: [single, mfa]))
        XCTAssertEqual(AuthenticationContext.values(" a  b "), ["a", "b"])
    }
}
