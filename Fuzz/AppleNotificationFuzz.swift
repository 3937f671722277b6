// libFuzzer harness for Sign in with Apple's server-to-server notifications (issue 66): the
// payload JWS, its `aud` read before the signature to choose the provider, the signature by
// the provider's published keys (a fixed key here), then `AppleNotificationClaims.checked`
// (issuer, age, jti, the `events` JSON string). Built by `ops/fuzz apple-notification`.
//
// Byte 0 picks the form: 0, the rest is the payload as Apple posts it; 1, the header JSON
// framed by a two-byte length, then the claims JSON: signed here, so that mutations reach the
// claims' checks and the events decoding.
// Properties beyond "no crash, no hang, no leak": an accepted notification is for the
// provider's audience, from its issuer, with an event that names a subject.

import Foundation
import ModgudDomain

let apple = FederatedProvider.apple(audiences: ["com.example.app.services"])
let verifier = IDTokenVerifier(keys: ProviderKeys(fetcher: FixedJWKS()))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAppleNotification(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size > 0, let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let payload: String
    if bytes[0] % 2 == 0 {
        payload = String(decoding: bytes.dropFirst(), as: UTF8.self)
    } else {
        var rest = bytes.dropFirst()
        guard let header = field(&rest), let signed = jws(header: header, payload: Array(rest), key: issuerKey) else { return 0 }
        payload = signed
    }
    guard let audience = try? AppleNotificationClaims.unverifiedAudience(payload), !Set(audience).isDisjoint(with: apple.audiences) else { return 0 }
    let keys = verifier
    guard let claims = blocking({ try? await keys.signed(payload, by: apple, as: AppleNotificationClaims.self) }),
        let event = try? claims.checked(provider: apple, now: Date(timeIntervalSince1970: 1_800_000_000), skew: 60)
    else { return 0 }
    guard !Set(claims.aud.value).isDisjoint(with: apple.audiences), !event.sub.isEmpty else {
        fatalError("a notification for another audience, or without a subject, was accepted")
    }
    return 0
}
