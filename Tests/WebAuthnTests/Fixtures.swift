import Crypto
import WebAuthn
import WebAuthnTesting

/// A relying party set up for tests, and builders that start valid.
struct TestRelyingParty {
    var rpID = "app.example.com"
    var origin = "https://app.example.com"
    var challenge: [UInt8] = Array(SHA256.hash(data: Array("challenge".utf8)))
    var policy = VerificationPolicy()
    let authenticator = SoftwareAuthenticator()

    var origins: OriginPolicy { .rpID(rpID) }

    func makeCredential(_ algorithm: COSEAlgorithm = .es256) -> SoftwareCredential {
        SoftwareCredential(algorithm: algorithm, rpID: rpID, userHandle: [1, 2, 3, 4])
    }

    func registrationOptions() -> SoftwareAuthenticator.RegistrationOptions {
        .init(challenge: challenge, origin: origin)
    }

    func assertionOptions() -> SoftwareAuthenticator.AssertionOptions {
        .init(challenge: challenge, origin: origin)
    }

    func register(_ credential: SoftwareCredential, _ change: (inout SoftwareAuthenticator.RegistrationOptions) -> Void = { _ in })
        async throws(WebAuthnError) -> RegistrationVerdict
    {
        var options = registrationOptions()
        change(&options)
        let response = try RegistrationCredential(json: authenticator.register(credential, options).json)
        return try await RegistrationVerifier().verify(response, expectedChallenge: challenge, expectedRPID: rpID, origins: origins, policy: policy)
    }

    func stored(_ credential: SoftwareCredential, signCount: UInt32 = 0) throws -> StoredCredential {
        StoredCredential(
            credentialID: credential.id, publicKey: try COSEKey(bytes: credential.publicKeyCOSE), signCount: signCount,
            userHandle: credential.userHandle, backupEligible: false)
    }

    func assert(
        _ credential: inout SoftwareCredential, stored: StoredCredential,
        _ change: (inout SoftwareAuthenticator.AssertionOptions) -> Void = { _ in }
    ) throws(WebAuthnError) -> AssertionVerdict {
        var options = assertionOptions()
        change(&options)
        let response = try AssertionCredential(json: authenticator.assert(&credential, options).json)
        return try AssertionVerifier().verify(
            response, expectedChallenge: challenge, expectedRPID: rpID, origins: origins, policy: policy, stored: stored)
    }
}

func XCTAssertThrowsWebAuthn(_ expected: WebAuthnError, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void) {
    do {
        try body()
        XCTFail("expected \(expected)", file: file, line: line)
    } catch let error as WebAuthnError {
        XCTAssertEqual(error, expected, file: file, line: line)
    } catch {
        XCTFail("unexpected \(error)", file: file, line: line)
    }
}

/// `XCTAssertThrowsWebAuthn` for an async body (registration verifies certificate paths asynchronously).
func XCTAssertThrowsWebAuthn(
    _ expected: WebAuthnError, file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void
) async {
    do {
        try await body()
        XCTFail("expected \(expected)", file: file, line: line)
    } catch let error as WebAuthnError {
        XCTAssertEqual(error, expected, file: file, line: line)
    } catch {
        XCTFail("unexpected \(error)", file: file, line: line)
    }
}

/// `XCTAssertThrowsError` for an async expression.
func XCTAssertThrowsErrorAsync<T>(
    _ expression: @autoclosure () async throws -> T, _ message: String = "", file: StaticString = #filePath, line: UInt = #line,
    _ handler: (any Error) -> Void = { _ in }
) async {
    do {
        _ = try await expression()
        XCTFail("expected an error. \(message)", file: file, line: line)
    } catch {
        handler(error)
    }
}

/// `XCTAssertNoThrow` for an async expression.
func XCTAssertNoThrowAsync<T>(
    _ expression: @autoclosure () async throws -> T, _ message: String = "", file: StaticString = #filePath, line: UInt = #line
) async {
    do { _ = try await expression() } catch { XCTFail("unexpected \(error). \(message)", file: file, line: line) }
}

import XCTest
