// libFuzzer harness for attestation-based client authentication (issue 66): the Client
// Attestation JWT (verified with JWTKit against a fixed attester key, as the server does with
// its realm key) and the Client Attestation PoP JWT verified with the key its `cnf.jwk` names.
// Built by `ops/fuzz client-attestation` from the attestation claims, PoP and DPoP key sources.
//
// Byte 0 picks the form: 0, the rest is `attestation~pop` as the two headers carry them; 1,
// the attestation's payload JSON framed by a two-byte length, then the PoP's payload JSON:
// both signed here (the attestation by the attester key, the PoP by the fixed instance key,
// whose JWK the seeds put in `cnf`), so that mutations reach the claims' checks.
// Properties beyond "no crash, no hang, no leak": an accepted PoP has a jti, and its key is
// the one the verified attestation binds.

import Crypto
import Foundation
import JWTKit

let issuer = "https://login.example.test"
let attester: JWTKeyCollection = blocking {
    let keys = JWTKeyCollection()
    await keys.add(ecdsa: try! ES256PrivateKey(backing: issuerKey))
    return keys
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzClientAttestation(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size > 0, let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let attestation: String, pop: String
    if bytes[0] % 2 == 0 {
        let parts = String(decoding: bytes.dropFirst(), as: UTF8.self).split(separator: "~", maxSplits: 1)
        guard parts.count == 2 else { return 0 }
        (attestation, pop) = (String(parts[0]), String(parts[1]))
    } else {
        var rest = bytes.dropFirst()
        guard let claims = field(&rest),
            let signedAttestation = jws(header: Array(#"{"alg":"ES256","typ":"oauth-client-attestation+jwt"}"#.utf8), payload: claims, key: issuerKey),
            let signedPoP = jws(header: Array(#"{"alg":"ES256","typ":"oauth-client-attestation-pop+jwt"}"#.utf8), payload: Array(rest), key: instanceKey)
        else { return 0 }
        (attestation, pop) = (signedAttestation, signedPoP)
    }
    let keys = attester
    guard let claims = blocking({ try? await keys.verify(attestation, as: ClientAttestationClaims.self) }),
        let key = try? claims.cnf.jwk.key()
    else { return 0 }
    guard let proof = try? ClientAttestationPoP(parsing: pop, key: key, issuer: issuer, clientID: "app") else { return 0 }
    guard !proof.jti.isEmpty, key == (try? claims.cnf.jwk.key()) else { fatalError("a PoP without jti, or by another key, was accepted") }
    return 0
}
