// libFuzzer harness for the DPoP proof parser (RFC 9449 section 4.3), the JWS the server parses
// on every DPoP request (issue 44). Built by `ops/fuzz dpop` from the DPoP key and proof
// sources, the WebAuthn library and swift-crypto linked from the debug build.
//
// Byte 0 picks the form: 0, the rest is the compact JWS as sent; 1, the header and payload
// JSON each framed by a two-byte length, then the signature bytes: the harness encodes them,
// so that mutations reach the JSON rather than the base64.
// Properties beyond "no crash, no hang, no leak": an accepted proof is for the request's
// method and URL, and its key's thumbprint is stable.

import Foundation
import WebAuthn

let method = "POST"
let url = "https://login.example.test/connect/token"

func framed(_ bytes: ArraySlice<UInt8>) -> String? {
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
    return [parts[0], parts[1], Array(rest)].map { Base64URL.encode($0) }.joined(separator: ".")
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDPoP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size > 0, let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let jws = bytes[0] % 2 == 0 ? String(decoding: bytes.dropFirst(), as: UTF8.self) : framed(bytes.dropFirst())
    guard let jws else { return 0 }
    for token in [nil, "an-access-token"] {
        guard let proof = try? DPoPProof(parsing: jws, method: method, url: url, accessToken: token) else { continue }
        guard proof.method == method, proof.url == url else { fatalError("a proof for another request was accepted") }
        guard proof.key.thumbprint == proof.key.thumbprint, !proof.jti.isEmpty else { fatalError("unstable key or empty jti") }
    }
    return 0
}
