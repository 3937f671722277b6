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

extension ArchitectureFitnessTests {
    /// `TokenService` mints and refreshes; it is no locator (issue 68, item 4): its
    /// collaborators are its own, and nothing reaches through it to them.
    func testNothingReachesThroughTheTokenService() throws {
        let reach = try NSRegularExpression(pattern: #"\b(tokens|tokenService)\.(users|families|tokens|minter|realms|vault|pool)\b"#)
        let files = try SQLHomeTests.files().filter { $0.path.hasPrefix("Modgud") && !$0.path.hasPrefix("ModgudService/OAuth/TokenService") }
        let offenders = files.filter { reach.firstMatch(in: $0.code, range: NSRange($0.code.startIndex..., in: $0.code)) != nil }.map(\.path)
        XCTAssertEqual(offenders, [], "a reach through the token service")
        let service = try SQLHomeTests.files().first { $0.path == "ModgudService/OAuth/TokenService.swift" }?.code ?? ""
        XCTAssertTrue(service.contains("struct TokenService"), "the check is looking at the wrong file")
        XCTAssertFalse(service.contains("public let "), "the token service hands out a collaborator")
    }

    /// The composition only composes (issue 68, item 5): services are computed from what it
    /// stores, so it stores the shared state and nothing built from it.
    func testTheCompositionStoresNoService() throws {
        let core = try SQLHomeTests.files().first { $0.path == "ModgudService/ModgudCore.swift" }?.code ?? ""
        let stored = try NSRegularExpression(pattern: #"^    (?:public )?let (\w+): (\w+)"#, options: [.anchorsMatchLines])
        let types = stored.matches(in: core, range: NSRange(core.startIndex..., in: core)).compactMap { match in
            Range(match.range(at: 2), in: core).map { String(core[$0]) }
        }
        XCTAssertGreaterThan(types.count, 10, "the check is looking at the wrong text")
        let services = types.filter { $0.hasSuffix("Service") || ["Administration", "UserEraser", "TOTPEnrollment", "TokenIntrospection"].contains($0) }
        XCTAssertEqual(services, [], "a service stored in the composition")
    }
}

extension ArchitectureFitnessTests {
    /// No source file over 300 lines (issue 68, item 8), outside the parsers
    /// (`ArchitectureFitnessTests.parsers`), whose grammars are read as one.
    func testNoFileIsLongerThanThreeHundredLines() throws {
        let root = SQLHomeTests.sources
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)!
        var long: [String] = []
        var seen = 0
        for case let url as URL in enumerator where url.pathExtension == "swift" {
            let path = String(url.path.dropFirst(root.path.count + 1))
            seen += 1
            guard !Self.parsers.contains(where: path.hasPrefix) else { continue }
            let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).count
            if lines > 301 { long.append("\(path): \(lines) lines") }
        }
        XCTAssertGreaterThan(seen, 100, "the check is looking at the wrong files")
        XCTAssertEqual(long, [], "files over 300 lines")
    }
}
