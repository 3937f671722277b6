// libFuzzer harness for certificate paths (issue 66): DER certificates through the one path
// validator the server uses for every chain it trusts (`CertificatePathValidator`: swift-
// certificates' Verifier and RFC5280Policy with the platforms' rules). Built by
// `ops/fuzz x509-chain` from the WebAuthn sources; seeded with the forged-chain corpus
// (Tests/ForgedChains), which Fuzz/seeds.py frames as this harness reads it.
//
// Input: byte 0 picks the rules (bits 0-1: RFC 5280, TPM, Apple, Android; bit 2: the second
// certificate's serial is revoked), then certificates each framed by a two-byte length; the
// last is the trust anchor, the others the chain, leaf first, as x5c sends it.
// Properties beyond "no crash, no hang, no leak": an accepted path starts at the leaf, ends at
// the anchor, and each certificate in it names and is signed by the next.

import Foundation
import X509

let verificationTime = Date(timeIntervalSince1970: 1_780_272_000)  // 2026-06-01, inside the corpus's validity

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzX509Chain(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size > 0, let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var rest = bytes.dropFirst()
    var certificates: [Certificate] = []
    while rest.count >= 2, certificates.count < 8 {
        let length = Int(rest[rest.startIndex]) << 8 | Int(rest[rest.startIndex + 1])
        rest = rest.dropFirst(2)
        guard rest.count >= length, let certificate = try? Certificate(derEncoded: Array(rest.prefix(length))) else { return 0 }
        certificates.append(certificate)
        rest = rest.dropFirst(length)
    }
    guard certificates.count >= 2, let anchor = certificates.last else { return 0 }
    let chain = Array(certificates.dropLast())
    let revoked = bytes[0] & 4 != 0 && chain.count > 1 ? RevokedSerials([RevokedSerials.hex(chain[1].serialNumber)]) : RevokedSerials()
    let rules: PathRules = [PathRules.rfc5280, .tpm, .apple, .android(revocations: revoked)][Int(bytes[0] & 3)]
    let validator = CertificatePathValidator(trustAnchors: [anchor], rules: rules, verificationTime: verificationTime)
    guard let path = blocking({ try? await validator.validate(chain) }) else { return 0 }
    guard path.first == chain[0], path.last == anchor else { fatalError("an accepted path does not run from the leaf to the anchor") }
    for (child, parent) in zip(path, path.dropFirst()) {
        guard child.issuer == parent.subject, parent.publicKey.isValidSignature(child.signature, for: child) else {
            fatalError("an accepted path holds a link that is not signed by its issuer")
        }
    }
    return 0
}
