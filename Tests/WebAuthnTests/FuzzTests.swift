import CBOR
import Foundation
import WebAuthn
import WebAuthnTesting
import XCTest

/// Random and mutated inputs derived from the vectors and the software authenticator: the
/// verifiers must never crash or hang, and every rejection is a typed `WebAuthnError`
/// (guaranteed by their typed `throws`; the test counts them).
///
/// `MODGUD_FUZZ_ITERATIONS` sets the count (default 100,000); `MODGUD_FUZZ_SEED` the seed.
final class FuzzTests: XCTestCase {
    /// SplitMix64: small, fast, reproducible from the seed.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9e37_79b9_7f4a_7c15
            var z = state
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(bound, 1))) }
    }

    enum Seed {
        case registration(RegistrationCredential, challenge: [UInt8], rpID: String, origin: String)
        case assertion(AssertionCredential, challenge: [UInt8], rpID: String, origin: String, stored: StoredCredential)
    }

    func seeds() throws -> [Seed] {
        var seeds: [Seed] = []
        if FileManager.default.fileExists(atPath: VectorTests.folder.path) {
            for file in try FileManager.default.contentsOfDirectory(atPath: VectorTests.folder.path) where file.hasSuffix(".json") && file != "index.json" {
                let vector = try JSONSerialization.jsonObject(with: Data(contentsOf: VectorTests.folder.appendingPathComponent(file))) as! [String: Any]
                let expected = vector["expected"] as! [String: Any]
                let json = try JSONSerialization.data(withJSONObject: vector["credential"]!)
                let challenge = Base64URL.decode(expected["challenge"] as! String)!
                let (rpID, origin) = (expected["rp_id"] as! String, expected["origin"] as! String)
                if vector["ceremony"] as? String == "registration" {
                    guard let credential = try? RegistrationCredential(json: Array(json)) else { continue }
                    seeds.append(.registration(credential, challenge: challenge, rpID: rpID, origin: origin))
                } else if let stored = vector["stored_credential"] as? [String: Any],
                    let key = try? COSEKey(bytes: Base64URL.decode(stored["public_key_cose"] as! String)!),
                    let credential = try? AssertionCredential(json: Array(json))
                {
                    let record = StoredCredential(
                        credentialID: Base64URL.decode(stored["credential_id"] as! String)!, publicKey: key,
                        signCount: UInt32(stored["sign_count"] as! Int))
                    seeds.append(.assertion(credential, challenge: challenge, rpID: rpID, origin: origin, stored: record))
                }
            }
        }
        let party = TestRelyingParty()
        for algorithm in [COSEAlgorithm.es256, .edDSA, .rs256] {
            var credential = party.makeCredential(algorithm)
            var options = party.registrationOptions()
            options.attestation = .packedSelf
            seeds.append(.registration(party.authenticator.register(credential, options), challenge: party.challenge, rpID: party.rpID, origin: party.origin))
            let stored = try party.stored(credential)
            seeds.append(
                .assertion(
                    party.authenticator.assert(&credential, party.assertionOptions()), challenge: party.challenge, rpID: party.rpID,
                    origin: party.origin, stored: stored))
        }
        return seeds
    }

    /// One of: flip bits, overwrite bytes, truncate, insert, duplicate a slice, set a length byte to an extreme.
    static func mutate(_ input: [UInt8], _ random: inout Random) -> [UInt8] {
        var bytes = input
        let rounds = 1 + random.below(3)
        for _ in 0..<rounds {
            switch random.below(6) {
            case 0 where !bytes.isEmpty:
                bytes[random.below(bytes.count)] ^= UInt8(1 << random.below(8))
            case 1 where !bytes.isEmpty:
                bytes[random.below(bytes.count)] = UInt8(truncatingIfNeeded: random.next())
            case 2:
                bytes = Array(bytes.prefix(random.below(bytes.count + 1)))
            case 3:
                let at = random.below(bytes.count + 1)
                bytes.insert(contentsOf: (0..<(1 + random.below(8))).map { _ in UInt8(truncatingIfNeeded: random.next()) }, at: at)
            case 4 where bytes.count > 2:
                let start = random.below(bytes.count - 1)
                let end = start + 1 + random.below(min(16, bytes.count - start))
                bytes.insert(contentsOf: bytes[start..<end], at: random.below(bytes.count))
            default:
                if !bytes.isEmpty { bytes[random.below(bytes.count)] = [0x00, 0x17, 0x18, 0x1b, 0x5b, 0x9b, 0xbb, 0xff][random.below(8)] }
            }
        }
        return bytes
    }

    /// 25,000 seeded mutations by default (MODGUD_FUZZ_ITERATIONS for more): since issue 44
    /// the coverage-guided `ops/fuzz webauthn` drives the same verifiers in every CI run, so
    /// this test keeps its mutation strategies and its per-reason census, not the volume.
    func testMutatedCeremoniesNeverCrashOrHang() async throws {
        let environment = ProcessInfo.processInfo.environment
        let iterations = environment["MODGUD_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 25_000
        var random = Random(state: environment["MODGUD_FUZZ_SEED"].flatMap(UInt64.init) ?? 0x5eed)
        let seeds = try seeds()
        XCTAssertGreaterThanOrEqual(seeds.count, 6, "at least the software authenticator's seeds")
        let policy = VerificationPolicy(requireUserVerification: false)
        let clock = ContinuousClock()
        var slowest = Duration.zero
        var rejected: [String: Int] = [:]
        var accepted = 0
        let started = clock.now
        for _ in 0..<iterations {
            let seed = seeds[random.below(seeds.count)]
            let iterationStart = clock.now
            let outcome: Result<Void, WebAuthnError>
            switch seed {
            case .registration(var credential, let challenge, let rpID, let origin):
                if random.below(2) == 0 {
                    let object = Base64URL.decode(credential.response.attestationObject)!
                    credential.response.attestationObject = Base64URL.encode(Self.mutate(object, &random))
                } else {
                    let clientData = Base64URL.decode(credential.response.clientDataJSON)!
                    credential.response.clientDataJSON = Base64URL.encode(Self.mutate(clientData, &random))
                }
                do {
                    _ = try await RegistrationVerifier().verify(
                        credential, expectedChallenge: challenge, expectedRPID: rpID, origins: .exactly(origin), policy: policy)
                    outcome = .success(())
                } catch {
                    outcome = .failure(error)
                }
            case .assertion(var credential, let challenge, let rpID, let origin, let stored):
                switch random.below(3) {
                case 0:
                    let data = Base64URL.decode(credential.response.authenticatorData)!
                    credential.response.authenticatorData = Base64URL.encode(Self.mutate(data, &random))
                case 1:
                    let clientData = Base64URL.decode(credential.response.clientDataJSON)!
                    credential.response.clientDataJSON = Base64URL.encode(Self.mutate(clientData, &random))
                default:
                    let signature = Base64URL.decode(credential.response.signature)!
                    credential.response.signature = Base64URL.encode(Self.mutate(signature, &random))
                }
                outcome = Result { () throws(WebAuthnError) in
                    _ = try AssertionVerifier().verify(
                        credential, expectedChallenge: challenge, expectedRPID: rpID, origins: .exactly(origin), policy: policy, stored: stored)
                }
            }
            switch outcome {
            case .success: accepted += 1
            case .failure(let error): rejected[error.reason, default: 0] += 1
            }
            slowest = max(slowest, clock.now - iterationStart)
        }
        let elapsed = clock.now - started
        print("fuzz: \(iterations) iterations in \(elapsed), slowest \(slowest); accepted \(accepted); rejected by reason: \(rejected.sorted { $0.key < $1.key })")
        XCTAssertEqual(accepted + rejected.values.reduce(0, +), iterations)
        XCTAssertLessThan(slowest, .seconds(1), "no single input may take long")
        XCTAssertGreaterThan(rejected.count, 5, "the mutations reach many different checks")
    }

    func testRandomBytesNeverCrashTheCBORDecoder() {
        var random = Random(state: 42)
        var failures: [String: Int] = [:]
        for _ in 0..<50_000 {
            let bytes = (0..<random.below(64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            do {
                _ = try CBORDecoder().decode(bytes)
            } catch {
                failures["\(error)".split(separator: " ").first.map(String.init) ?? "", default: 0] += 1
            }
        }
        XCTAssertFalse(failures.isEmpty)
    }
}
