// libFuzzer harness for Play Integrity tokens of classic requests (issue 66): the compact JWE
// (A256KW, A256GCM) of an ES256 JWS of the verdict, decrypted and verified by
// `PlayIntegrityVerifier` with fixed Play Console keys. Built by `ops/fuzz play-integrity` from
// the WebAuthn sources.
//
// Byte 0 picks the form: 0, the rest is the token as sent; 1, the rest is the verdict JSON,
// signed and encrypted here with the fixed keys (a fixed CEK and IV: deterministic), so that
// mutations reach the verdict's checks; 2, the rest is the JWS text, encrypted here, so that
// mutations reach the JWS parser.
// Properties beyond "no crash, no hang, no leak": an accepted verdict is for the package asked
// about, on a device that meets device integrity.

import Crypto
import Foundation

let decryptionKey = SymmetricKey(data: Array(1...32) as [UInt8])
let signingKey = try! P256.Signing.PrivateKey(rawRepresentation: Array(1...32) as [UInt8])
let contentKey = SymmetricKey(data: Array(33...64) as [UInt8])
let package = "com.example.app"
let verifier = try! PlayIntegrityVerifier(
    decryptionKey: decryptionKey.withUnsafeBytes { Data($0) }.base64EncodedString(),
    verificationKey: signingKey.publicKey.derRepresentation.base64EncodedString())

func encrypted(_ jws: [UInt8]) -> String? {
    let protected = Base64URL.encode(Array(#"{"alg":"A256KW","enc":"A256GCM"}"#.utf8))
    guard let wrapped = try? AES.KeyWrap.wrap(contentKey, using: decryptionKey),
        let sealed = try? AES.GCM.seal(jws, using: contentKey, nonce: AES.GCM.Nonce(data: [UInt8](repeating: 7, count: 12)), authenticating: Array(protected.utf8))
    else { return nil }
    return [protected, Base64URL.encode(Array(wrapped)), Base64URL.encode(Array(sealed.nonce)), Base64URL.encode(Array(sealed.ciphertext)),
        Base64URL.encode(Array(sealed.tag))].joined(separator: ".")
}

func signed(_ verdict: ArraySlice<UInt8>) -> [UInt8]? {
    let input = Base64URL.encode(Array(#"{"alg":"ES256"}"#.utf8)) + "." + Base64URL.encode(Array(verdict))
    guard let signature = try? signingKey.signature(for: Array(input.utf8)) else { return nil }
    return Array((input + "." + Base64URL.encode(Array(signature.rawRepresentation))).utf8)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPlayIntegrity(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size > 0, let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let token: String?
    switch bytes[0] % 3 {
    case 0: token = String(decoding: bytes.dropFirst(), as: UTF8.self)
    case 1: token = signed(bytes.dropFirst()).flatMap(encrypted)
    default: token = encrypted(Array(bytes.dropFirst()))
    }
    guard let token else { return 0 }
    let digest = Array(SHA256.hash(data: Array("certificate".utf8)))
    guard
        let verdict = try? verifier.verify(
            token, nonce: "fuzz-nonce", packageName: package, certificateDigests: [digest], now: Date(timeIntervalSince1970: 1_800_000_000))
    else { return 0 }
    guard verdict.packageName == package, verdict.deviceLabels.contains(where: { $0 == "MEETS_DEVICE_INTEGRITY" || $0 == "MEETS_STRONG_INTEGRITY" }) else {
        fatalError("a verdict for another package or device was accepted")
    }
    return 0
}
