// libFuzzer harness for the DPoP proof parser (RFC 9449 section 4.3), the JWS the server parses
// on every DPoP request (issue 44). Built by `ops/fuzz dpop` from the DPoP key and proof
// sources, the WebAuthn library and swift-crypto linked from the debug build.
//
// Byte 0 picks the form: 0, the rest is the compact JWS as sent; 1, the header and payload
// JSON each framed by a two-byte length, then the signature bytes: the harness encodes them,
// so that mutations reach the JSON rather than the base64; 2, the header and payload JSON
// framed alike, signed here with a fixed ES256 key (its JWK is in the seeds' headers), so that
// mutations that keep the key get past the signature to the claims' checks.
// Properties beyond "no crash, no hang, no leak": an accepted proof is for the request's
// method and URL (compared as RFC 9449 compares them: the fuzzer's first find was `Https://`,
// rightly accepted, against a harness that compared the text), and its key's thumbprint is
// stable.

import Crypto
import Foundation
import WebAuthn

/// The fixed key of form 2: the scalar 1, 2, …, 32 (`Fuzz/seeds.py` writes its public JWK).
let fixedKey = try! P256.Signing.PrivateKey(rawRepresentation: Array(1...32) as [UInt8])

let method = "POST"
let url = "https://login.example.test/connect/token"

func framed(_ bytes: ArraySlice<UInt8>, signing: Bool = false) -> String? {
    var rest = bytes
    var parts: [[UInt8]] = []
    for _ in 0..<2 {
        guard rest.count >= 2 else { return nil }
        let length = Int(rest[rest.startIndex]) << 8 | Int(rest[rest.startIndex + 1])
        rest = rest.dropFirst(2)
        guard rest.count >= length else { return nil }
        parts.append(Array(rest.prefix(length)))
        rest = rest.dropFirst(length)
    }
    let input = Base64URL.encode(parts[0]) + "." + Base64URL.encode(parts[1])
    guard signing else { return input + "." + Base64URL.encode(Array(rest)) }
    guard let signature = try? fixedKey.signature(for: Array(input.utf8)) else { return nil }
    return input + "." + Base64URL.encode(Array(signature.rawRepresentation))
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDPoP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size > 0, let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let jws: String?
    switch bytes[0] % 3 {
    case 0: jws = String(decoding: bytes.dropFirst(), as: UTF8.self)
    case 1: jws = framed(bytes.dropFirst())
    default: jws = framed(bytes.dropFirst(), signing: true)
    }
    guard let jws else { return 0 }
    for token in [nil, "an-access-token"] {
        guard let proof = try? DPoPProof(parsing: jws, method: method, url: url, accessToken: token) else { continue }
        // The URI as RFC 9449 section 4.3 step 9 compares it (RFC 3986 section 6.2.2 and 6.2.3:
        // scheme and host case-insensitive, the default port implied); `Https://` is the same URI.
        guard proof.method == method, DPoPTarget(proof.url) == DPoPTarget(url) else { fatalError("a proof for another request was accepted") }
        guard proof.key.thumbprint == proof.key.thumbprint, !proof.jti.isEmpty else { fatalError("unstable key or empty jti") }
    }
    return 0
}
