// libFuzzer harness for the WebAuthn library (issue 44): attestation objects through the
// registration verifier (every format the registry knows), assertions through the assertion
// verifier, authenticator data and COSE keys alone. Built by `ops/fuzz webauthn`: the WebAuthn
// sources instrumented, its dependencies (CBOR, swift-crypto, swift-certificates) linked from
// the debug build.
//
// An input is framed so that mutations reach the CBOR and the signatures, not only the
// framing: byte 0 picks the mode, then fields each with a two-byte big-endian length, then the
// rest. `Fuzz/seeds.py webauthn` frames every vector this way, so the seeds pass every check
// up to the signature and the certificate chains.
//   mode 0, registration: rpID, origin, challenge, clientDataJSON | attestationObject
//   mode 1, assertion:    rpID, origin, challenge, clientDataJSON, authenticatorData, signature | COSE key
//   mode 2:               | authenticator data
//   mode 3, COSE key:     key, signature | signed data
//
// Properties beyond "no crash, no hang, no leak": a verdict's key re-parses from its own
// encoding to the same algorithm; an accepted assertion's new counter is the data's.

import CBOR
import Foundation

struct Fields {
    var bytes: ArraySlice<UInt8>

    mutating func next() -> [UInt8]? {
        guard bytes.count >= 2 else { return nil }
        let length = Int(bytes[bytes.startIndex]) << 8 | Int(bytes[bytes.startIndex + 1])
        bytes = bytes.dropFirst(2)
        guard bytes.count >= length else { return nil }
        defer { bytes = bytes.dropFirst(length) }
        return Array(bytes.prefix(length))
    }

    mutating func text() -> String? { next().flatMap { String(decoding: $0, as: UTF8.self) } }
    var rest: [UInt8] { Array(bytes) }
}

let permissive = VerificationPolicy(
    requireUserPresence: false, requireUserVerification: false, allowCrossOrigin: true, allowedAlgorithms: COSEAlgorithm.allCases)

func registration(_ fields: inout Fields) {
    guard let rpID = fields.text(), let origin = fields.text(), let challenge = fields.next(), let clientData = fields.next() else { return }
    let attestation = fields.rest
    // The credential names the attested id when there is one, so the format's checks are reached.
    var rawID: [UInt8] = [1]
    if let object = try? CBORDecoder().decode(attestation), let authData = object[text: "authData"]?.bytesValue,
        let parsed = try? AuthenticatorData(authData), let attested = parsed.attestedCredential
    {
        rawID = attested.credentialID
    }
    let credential = RegistrationCredential(
        id: Base64URL.encode(rawID), rawId: Base64URL.encode(rawID),
        response: .init(clientDataJSON: Base64URL.encode(clientData), attestationObject: Base64URL.encode(attestation)))
    // Registration is async (its certificate paths are: Fuzz/AsyncBlocking.swift).
    guard
        let verdict = blocking({
            try? await RegistrationVerifier().verify(
                credential, expectedChallenge: challenge, expectedRPID: rpID, origins: .exactly(origin), policy: permissive)
        })
    else { return }
    guard let again = try? COSEKey(bytes: verdict.publicKey.encoded), again.algorithm == verdict.publicKey.algorithm else {
        fatalError("an accepted credential's key does not re-parse from its encoding")
    }
}

func assertion(_ fields: inout Fields) {
    guard let rpID = fields.text(), let origin = fields.text(), let challenge = fields.next(), let clientData = fields.next(),
        let authData = fields.next(), let signature = fields.next()
    else { return }
    guard let key = try? COSEKey(bytes: fields.rest) else { return }
    let id: [UInt8] = [7, 7, 7]
    let credential = AssertionCredential(
        id: Base64URL.encode(id), rawId: Base64URL.encode(id),
        response: .init(
            clientDataJSON: Base64URL.encode(clientData), authenticatorData: Base64URL.encode(authData), signature: Base64URL.encode(signature),
            userHandle: nil))
    let stored = StoredCredential(credentialID: id, publicKey: key, signCount: 0)
    guard
        let verdict = try? AssertionVerifier().verify(
            credential, expectedChallenge: challenge, expectedRPID: rpID, origins: .exactly(origin), policy: permissive, stored: stored)
    else { return }
    guard let parsed = try? AuthenticatorData(authData), parsed.signCount == verdict.newSignCount else {
        fatalError("an accepted assertion's counter is not its data's")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebAuthn(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size > 0, let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var fields = Fields(bytes: bytes.dropFirst())
    switch bytes[0] % 4 {
    case 0: registration(&fields)
    case 1: assertion(&fields)
    case 2: _ = try? AuthenticatorData(fields.rest)
    default:
        guard let keyBytes = fields.next(), let signature = fields.next(), let key = try? COSEKey(bytes: keyBytes) else { return 0 }
        _ = key.isValidSignature(signature, for: fields.rest)
    }
    return 0
}
