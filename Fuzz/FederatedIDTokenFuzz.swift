// libFuzzer harness for a federated provider's ID token (issue 66): `IDTokenVerifier` (OpenID
// Connect Core section 3.1.3.7) with a provider whose JWKS publishes a fixed key. Built by
// `ops/fuzz id-token` from the federation sources.
//
// Byte 0 picks the form: 0, the rest is the token as sent; 1, the header JSON framed by a
// two-byte length, then the payload JSON: signed here with the provider key, so that mutations
// reach the claims' checks (issuer, audience, expiry, nonce).
// Properties beyond "no crash, no hang, no leak": an accepted token names the provider's
// issuer, one of its audiences, and the nonce of this sign-in.

import Foundation
import ModgudDomain

let provider = FederatedProvider.google(audiences: ["fuzz-client.apps.googleusercontent.com"])
let tokens = IDTokenVerifier(keys: ProviderKeys(fetcher: FixedJWKS()))
let nonceHash = IDTokenVerifier.nonceHash("fuzz-nonce")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIDToken(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size > 0, let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let token: String
    if bytes[0] % 2 == 0 {
        token = String(decoding: bytes.dropFirst(), as: UTF8.self)
    } else {
        var rest = bytes.dropFirst()
        guard let header = field(&rest), let signed = jws(header: header, payload: Array(rest), key: issuerKey) else { return 0 }
        token = signed
    }
    let verifier = tokens
    guard
        let claims = blocking({
            try? await verifier.verify(token, provider: provider, nonceHash: nonceHash, now: Date(timeIntervalSince1970: 1_800_000_000))
        })
    else { return 0 }
    guard provider.acceptedIssuers.contains(claims.iss), !Set(claims.aud.value).isDisjoint(with: provider.audiences), claims.nonce?.lowercased() == nonceHash
    else { fatalError("an ID token for another issuer, audience or sign-in was accepted") }
    return 0
}
