import Foundation
import ModgudDomain
@testable import ModgudService
import XCTest

/// Issue 68: one sign-in core. The step after a proof (account gate, scopes and audiences,
/// prepared tokens, the writes that commit with the proof) is written once, in
/// `ModgudService/SignIn/SignInPipeline.swift`, and every factor is registered.
extension ArchitectureFitnessTests {
    /// What only the pipeline (and the token service it mints with) may do.
    static let pipelineOnly = [
        "prepareSignIn(", "prepareRecoverySession(", "secondFactor.check(", "ScopePolicy.grantedScopes(requested: grant.",
        "AuthenticationContext.emailAMR(", "AuthenticationContext.passkeyAMR(", "spentStep(realm:",
    ]

    func testTheStepAfterAProofIsWrittenOnce() throws {
        let home = ["ModgudService/SignIn/SignInPipeline.swift", "ModgudService/SignIn/SignInFactor.swift", "ModgudService/SignIn/AccountGate.swift"]
        let files = try SQLHomeTests.files().filter { $0.path.hasPrefix("Modgud") && !home.contains($0.path) && !$0.path.hasPrefix("ModgudService/OAuth/TokenService") }
        var offenders: [String] = []
        for file in files {
            for call in Self.pipelineOnly where file.code.contains(call) { offenders.append("\(file.path): \(call)") }
        }
        XCTAssertEqual(offenders, [], "sign-in steps outside the pipeline")
        let pipeline = try SQLHomeTests.files().first { $0.path == home[0] }?.code ?? ""
        XCTAssertTrue(pipeline.contains("secondFactor.check("), "the check is looking at the wrong file")
    }

    /// Every grant that signs a person in has its factor in the registry, under its wire name.
    func testEveryFactorIsRegistered() {
        let userGrants = GrantType.allCases.filter { $0.isUserGrant && $0 != .refreshToken }
        XCTAssertEqual(userGrants.count, 6)
        for grant in userGrants {
            XCTAssertEqual(SignInFactor.Kind.registered(grant)?.grantType, grant, "\(grant.rawValue) has no factor")
        }
        XCTAssertEqual(Set(SignInFactor.Kind.allCases.map(\.grantType)), Set(userGrants))
        XCTAssertNil(SignInFactor.Kind.registered(.refreshToken))
    }

    /// The methods each factor states (RFC 8176), and which ask the account's second factor.
    func testEachFactorStatesItsMethods() {
        XCTAssertEqual(SignInFactor.emailCode.methods(secondFactor: false), ["otp"])
        XCTAssertEqual(SignInFactor.emailCode.methods(secondFactor: true), ["otp", "mfa"])
        XCTAssertTrue(SignInFactor.magicLink.asksSecondFactor)
        XCTAssertFalse(SignInFactor.passkey(backupEligible: true).asksSecondFactor)
        XCTAssertEqual(SignInFactor.passkey(backupEligible: true).methods(secondFactor: true), ["swk", "mfa"])
        XCTAssertEqual(SignInFactor.passkey(backupEligible: false).methods(secondFactor: false), ["hwk", "mfa"])
        XCTAssertEqual(SignInFactor.federated(provider: "apple").methods(secondFactor: true), ["fed", "otp", "mfa"])
        XCTAssertEqual(SignInFactor.federated(provider: "apple").federation, "apple")
        XCTAssertFalse(SignInFactor.recoveryCode.asksSecondFactor)
        XCTAssertEqual(SignInFactor.deviceApproval(amr: ["hwk", "mfa"], at: Date(timeIntervalSince1970: 9)).authTime, Date(timeIntervalSince1970: 9))
    }
}

extension ArchitectureFitnessTests {
    /// No control flow turns on an error's text (issue 68): codes are compared as
    /// `OAuthError.Code` values, and known refusals as whole values.
    func testNoControlFlowTurnsOnAnErrorsText() throws {
        let text = try NSRegularExpression(pattern: #"\.(error|description) (==|!=) ("|\w+\.\w+\.description)"#)
        let files = try SQLHomeTests.files().filter { $0.path.hasPrefix("Modgud") }
        let offenders = files.filter { text.firstMatch(in: $0.code, range: NSRange($0.code.startIndex..., in: $0.code)) != nil }.map(\.path)
        XCTAssertEqual(offenders, [], "an error's text in control flow")
        let sample = #"catch let refusal as OAuthError where refusal.error == "invalid_grant" {"#
        XCTAssertNotNil(text.firstMatch(in: sample, range: NSRange(location: 0, length: sample.utf16.count)), "the check would miss the old code")
    }

    /// HTTP controllers hold no sign-in state (issue 68, item 2): the first-party session, what
    /// it holds for a second factor and the uniform answers' timing are `FirstPartySignIn`'s.
    func testTheChallengeEndpointHoldsNoSignInState() throws {
        let state = ["SessionState", "heldCode", "heldLink", "awaitingNames", "firstParty.update(", "firstParty.begin(", "firstParty.issueCode("]
        let files = try SQLHomeTests.files().filter { $0.path.hasPrefix("ModgudHTTP/") }
        var offenders: [String] = []
        for file in files {
            for name in state where file.code.contains(name) { offenders.append("\(file.path): \(name)") }
        }
        XCTAssertEqual(offenders, [], "sign-in state in HTTP")
        let challenge = files.first { $0.path == "ModgudHTTP/AuthorizationChallengeController.swift" }?.code ?? ""
        XCTAssertFalse(challenge.isEmpty, "the check is looking at the wrong files")
        XCTAssertFalse(challenge.contains("jitter.wait"), "the challenge endpoint times its own answers")
    }
}
