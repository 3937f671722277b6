import CBOR
import WebAuthn
import WebAuthnTesting
import XCTest

/// Registration and sign-in round trips with real keys, then each check broken one field at a time.
final class SoftwareAuthenticatorTests: XCTestCase {
    let party = TestRelyingParty()

    func testRegisterThenSignInForEveryAlgorithmAndFormat() async throws {
        for algorithm in [COSEAlgorithm.es256, .edDSA, .rs256] {
            for attestation in [SoftwareAuthenticator.Attestation.none, .packedSelf] {
                var credential = party.makeCredential(algorithm)
                let verdict = try await party.register(credential) { $0.attestation = attestation }
                XCTAssertEqual(verdict.credentialID, credential.id)
                XCTAssertEqual(verdict.publicKey.algorithm, algorithm)
                XCTAssertEqual(verdict.attestationFormat, attestation == .none ? "none" : "packed")
                XCTAssertEqual(verdict.attestation.type, attestation == .none ? .none : .selfAttestation)
                XCTAssertTrue(verdict.userVerified)
                XCTAssertEqual(verdict.transports, ["internal"])

                var stored = try party.stored(credential)
                stored.publicKey = try COSEKey(bytes: verdict.publicKey.encoded)
                let first = try party.assert(&credential, stored: stored)
                XCTAssertEqual(first.newSignCount, 1)
                XCTAssertEqual(first.userHandle, [1, 2, 3, 4])
                stored.signCount = first.newSignCount
                let second = try party.assert(&credential, stored: stored)
                XCTAssertEqual(second.newSignCount, 2, "\(algorithm) \(attestation)")
            }
        }
    }

    func testRegistrationChecksEachFailOnTheirOwn() async throws {
        let credential = party.makeCredential()
        await XCTAssertThrowsWebAuthn(.challengeMismatch) { _ = try await party.register(credential) { $0.challenge = [9, 9, 9] } }
        await XCTAssertThrowsWebAuthn(.originMismatch("https://evil.example")) {
            _ = try await party.register(credential) { $0.origin = "https://evil.example" }
        }
        await XCTAssertThrowsWebAuthn(.clientDataTypeMismatch(expected: "webauthn.create", received: "webauthn.get")) {
            _ = try await party.register(credential) { $0.clientDataType = "webauthn.get" }
        }
        await XCTAssertThrowsWebAuthn(.rpIDHashMismatch) { _ = try await party.register(credential) { $0.rpIDOverride = "other.example.com" } }
        await XCTAssertThrowsWebAuthn(.userPresenceRequired) { _ = try await party.register(credential) { $0.flags = [.userVerified] } }
        await XCTAssertThrowsWebAuthn(.userVerificationRequired) { _ = try await party.register(credential) { $0.flags = [.userPresent] } }
        await XCTAssertThrowsWebAuthn(.invalidBackupFlags) {
            _ = try await party.register(credential) { $0.flags = [.userPresent, .userVerified, .backedUp] }
        }
        await XCTAssertThrowsWebAuthn(.crossOriginNotAllowed) { _ = try await party.register(credential) { $0.crossOrigin = true } }
        var edOnly = party
        edOnly.policy.allowedAlgorithms = [.edDSA]
        await XCTAssertThrowsWebAuthn(.algorithmNotAllowed(.es256)) { _ = try await edOnly.register(credential) }
        // A multi-device passkey: BE and BS both set is fine.
        let synced = try await party.register(credential) { $0.flags = [.userPresent, .userVerified, .backupEligible, .backedUp] }
        XCTAssertTrue(synced.backupEligible && synced.backedUp)
        // Extensions are carried through when the ED flag announces them.
        let extended = try await party.register(credential) { $0.extensions = .map([.init(.text("credProtect"), .unsigned(2))]) }
        XCTAssertEqual(extended.extensions?[text: "credProtect"], .unsigned(2))
    }

    func testAssertionChecksEachFailOnTheirOwn() throws {
        var credential = party.makeCredential()
        let stored = try party.stored(credential, signCount: 10)
        credential.signCount = 10
        XCTAssertThrowsWebAuthn(.challengeMismatch) { _ = try party.assert(&credential, stored: stored) { $0.challenge = [1] } }
        XCTAssertThrowsWebAuthn(.originMismatch("https://app.example.com.evil.io")) {
            _ = try party.assert(&credential, stored: stored) { $0.origin = "https://app.example.com.evil.io" }
        }
        XCTAssertThrowsWebAuthn(.clientDataTypeMismatch(expected: "webauthn.get", received: "webauthn.create")) {
            _ = try party.assert(&credential, stored: stored) { $0.clientDataType = "webauthn.create" }
        }
        XCTAssertThrowsWebAuthn(.rpIDHashMismatch) { _ = try party.assert(&credential, stored: stored) { $0.rpIDOverride = "example.org" } }
        XCTAssertThrowsWebAuthn(.userVerificationRequired) { _ = try party.assert(&credential, stored: stored) { $0.flags = [.userPresent] } }
        XCTAssertThrowsWebAuthn(.backupEligibilityChanged) {
            _ = try party.assert(&credential, stored: stored) { $0.flags = [.userPresent, .userVerified, .backupEligible] }
        }
        XCTAssertThrowsWebAuthn(.signCountNotIncreasing(stored: 10, received: 10)) {
            _ = try party.assert(&credential, stored: stored) { $0.signCount = 10 }
        }
        XCTAssertThrowsWebAuthn(.signCountNotIncreasing(stored: 10, received: 3)) {
            _ = try party.assert(&credential, stored: stored) { $0.signCount = 3 }
        }
        var stranger = party.makeCredential()
        XCTAssertThrowsWebAuthn(.unknownCredential) { _ = try party.assert(&stranger, stored: stored) }
        var otherUser = stored
        otherUser.userHandle = [9, 9]
        XCTAssertThrowsWebAuthn(.userHandleMismatch) { _ = try party.assert(&credential, stored: otherUser) }
        var otherKey = stored
        otherKey.publicKey = try COSEKey(bytes: party.makeCredential().publicKeyCOSE)
        XCTAssertThrowsWebAuthn(.signatureInvalid) { _ = try party.assert(&credential, stored: otherKey) }
        XCTAssertNoThrow(try party.assert(&credential, stored: stored) { $0.signCount = 11 })
    }

    func testCountersThatStayZeroAreAccepted() throws {
        var credential = party.makeCredential()
        let stored = try party.stored(credential, signCount: 0)
        let verdict = try party.assert(&credential, stored: stored) { $0.signCount = 0 }
        XCTAssertEqual(verdict.newSignCount, 0, "authenticators without counters (synced passkeys) report 0")
    }

    func testTamperedSignatureAndAuthenticatorDataAreRejected() throws {
        var credential = party.makeCredential()
        let stored = try party.stored(credential)
        let genuine = party.authenticator.assert(&credential, party.assertionOptions())
        func verify(_ response: AssertionCredential) throws {
            _ = try AssertionVerifier().verify(
                response, expectedChallenge: party.challenge, expectedRPID: party.rpID, origins: party.origins, policy: party.policy,
                stored: stored)
        }
        XCTAssertNoThrow(try verify(genuine), "the untouched assertion verifies")
        // A flipped bit in the signature.
        var response = genuine
        var signature = Base64URL.decode(response.response.signature)!
        signature[signature.count / 2] ^= 0x01
        response.response.signature = Base64URL.encode(signature)
        XCTAssertThrowsWebAuthn(.signatureInvalid) { try verify(response) }
        // A raised sign count in the authenticator data (bytes 33 to 36), the signature left as
        // it was: the data no longer matches what was signed.
        response = genuine
        var data = Base64URL.decode(response.response.authenticatorData)!
        data[36] &+= 1
        response.response.authenticatorData = Base64URL.encode(data)
        XCTAssertThrowsWebAuthn(.signatureInvalid) { try verify(response) }
        // The user-verified flag (bit 2 of byte 32) cleared, as an attacker would to skip UV.
        response = genuine
        data = Base64URL.decode(response.response.authenticatorData)!
        data[32] &= ~0x04
        response.response.authenticatorData = Base64URL.encode(data)
        XCTAssertThrowsError(try verify(response), "a cleared UV flag fails the policy or the signature")
    }

    func testPackedSelfAttestationWithTheWrongAlgorithmIsInvalid() async throws {
        let credential = party.makeCredential()
        var response = party.authenticator.register(credential, { var o = party.registrationOptions(); o.attestation = .packedSelf; return o }())
        // Rewrite attStmt.alg to RS256: the statement no longer matches the credential key.
        let object = try CBORDecoder().decode(Base64URL.decode(response.response.attestationObject)!)
        let statement = object[text: "attStmt"]!.mapValue!.map { $0.key == .text("alg") ? CBORMapEntry($0.key, .int(-257)) : $0 }
        let rewritten = object.mapValue!.map { $0.key == .text("attStmt") ? CBORMapEntry($0.key, .map(statement)) : $0 }
        response.response.attestationObject = Base64URL.encode(CBOREncoder.encode(.map(rewritten)))
        do {
            _ = try await RegistrationVerifier().verify(
                response, expectedChallenge: party.challenge, expectedRPID: party.rpID, origins: party.origins, policy: party.policy)
            XCTFail("a packed self attestation with the wrong alg was accepted")
        } catch {
            XCTAssertEqual(error.reason, "attestation_invalid")
        }
    }
}
