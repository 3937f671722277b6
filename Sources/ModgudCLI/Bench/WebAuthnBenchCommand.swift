import ArgumentParser
import Crypto
import WebAuthn
import WebAuthnTesting

/// `modgud bench webauthn`: verification rates on one core, beside the raw P-256 verify rate.
struct WebAuthnBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webauthn",
        abstract: "Assertion and registration verifications per second on one core (build with -c release).")

    @Option(help: "Seconds to run each case.") var seconds: Double = 1.0

    func run() async throws {
        let rpID = "app.example.com"
        let origin = "https://app.example.com"
        let challenge = Array(SHA256.hash(data: Array("bench".utf8)))
        let origins = OriginPolicy.rpID(rpID)
        let policy = VerificationPolicy()
        let authenticator = SoftwareAuthenticator()
        print("modgud bench webauthn — one core, \(seconds) s per case")
        print("case".padding(52) + "ops/s".padding(10, left: true) + "µs/op".padding(10, left: true) + "vs raw P-256".padding(14, left: true))

        // The yardstick: swift-crypto's raw P-256 verify of the same-sized message.
        let rawKey = P256.Signing.PrivateKey()
        let message = Array(repeating: UInt8(7), count: 37 + 32)
        let rawSignature = try rawKey.signature(for: message)
        let raw = await measure { _ = rawKey.publicKey.isValidSignature(rawSignature, for: message) }
        report("raw P-256 verify (swift-crypto)", raw, yardstick: raw)

        for algorithm in [COSEAlgorithm.es256, .edDSA, .rs256] {
            var credential = SoftwareCredential(algorithm: algorithm, rpID: rpID, userHandle: [1, 2, 3])
            let stored = StoredCredential(
                credentialID: credential.id, publicKey: try COSEKey(bytes: credential.publicKeyCOSE), signCount: 0, userHandle: [1, 2, 3])
            let assertion = authenticator.assert(&credential, .init(challenge: challenge, origin: origin))
            let json = assertion.json
            let verifier = AssertionVerifier()
            let parsed = await measure {
                _ = try! verifier.verify(
                    assertion, expectedChallenge: challenge, expectedRPID: rpID, origins: origins, policy: policy, stored: stored)
            }
            report("assertion \(algorithm), verify", parsed, yardstick: raw)
            let full = await measure {
                let credential = try! AssertionCredential(json: json)
                _ = try! verifier.verify(
                    credential, expectedChallenge: challenge, expectedRPID: rpID, origins: origins, policy: policy, stored: stored)
            }
            report("assertion \(algorithm), JSON + verify", full, yardstick: raw)
        }
        for attestation in [SoftwareAuthenticator.Attestation.none, .packedSelf] {
            let credential = SoftwareCredential(algorithm: .es256, rpID: rpID, userHandle: [1])
            var options = SoftwareAuthenticator.RegistrationOptions(challenge: challenge, origin: origin)
            options.attestation = attestation
            let json = authenticator.register(credential, options).json
            let verifier = RegistrationVerifier()
            let rate = await measure {
                let response = try! RegistrationCredential(json: json)
                _ = try! await verifier.verify(response, expectedChallenge: challenge, expectedRPID: rpID, origins: origins, policy: policy)
            }
            report("registration ES256 \(attestation == .none ? "none" : "packed self"), JSON + verify", rate, yardstick: raw)
        }
    }

    /// Operations per second of `body`, run for `seconds` (async: registration's certificate
    /// path validation is).
    private func measure(_ body: () async -> Void) async -> Double {
        let clock = ContinuousClock()
        for _ in 0..<200 { await body() }
        var operations = 0
        let started = clock.now
        let budget = Duration.milliseconds(Int64(seconds * 1000))
        while clock.now - started < budget {
            for _ in 0..<50 { await body() }
            operations += 50
        }
        let elapsed = clock.now - started
        return Double(operations) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    private func report(_ label: String, _ rate: Double, yardstick: Double) {
        let micros = (1_000_000 / rate * 10).rounded() / 10
        let ratio = (rate / yardstick * 100).rounded() / 100
        print(label.padding(52) + "\(Int(rate))".padding(10, left: true) + "\(micros)".padding(10, left: true) + "\(ratio)x".padding(14, left: true))
    }
}
