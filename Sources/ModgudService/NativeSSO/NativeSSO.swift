import Foundation
import JWTKit
import ModgudDomain

/// OpenID Connect Native SSO for Mobile Apps, draft 07 (issue 69): its names and the pure rules
/// of who gets a device secret. The exchange and the sign-out are `TokenService`'s
/// (`TokenService+NativeSSO.swift`).
public enum NativeSSO {
    /// Section 3.1: the scope that asks for a device secret.
    public static let scope = "device_sso"
    /// Section 4.1: the `actor_token_type` of the device secret. Drafts 05 and 06 named it
    /// `urn:x-oath:params:oauth:token-type:device-secret`, which apps written then still send.
    public static let deviceSecretType = "urn:openid:params:token-type:device-secret"
    public static let deviceSecretTypes: Set<String> = [deviceSecretType, "urn:x-oath:params:oauth:token-type:device-secret"]

    /// The device session of a sign-in, and a new device secret when it starts one.
    ///
    /// Section 3.3: a sign-in granted `device_sso` with `openid` by a client in a team gets a
    /// new device secret, its ID token and its family are the device session's, bound to the
    /// request's DPoP key when it has one. A token exchange (`joining`) joins the session it
    /// proved and gets no new secret: the device keeps the one it shares. `device_sso` stays in
    /// `scopes` only when a secret is issued, so the response's `scope` says what was granted.
    static func session(
        scopes: inout [String], team: NativeSSOTeam?, joining: DeviceSessionLink?, familyID: UUID, dpopKey: String?
    ) -> (link: DeviceSessionLink?, secret: String?) {
        let asked = scopes.contains(scope)
        scopes.removeAll { $0 == scope }
        if let joining { return (joining, nil) }
        guard asked, let team, scopes.contains("openid") else { return (nil, nil) }
        scopes.append(scope)
        let (secret, hash) = OpaqueToken.generate()
        return (DeviceSessionLink(sessionID: familyID, secretHash: hash, team: team.name, dpopKey: dpopKey), secret)
    }

    /// Every refusal of the exchange is `invalid_grant` whose description starts with the
    /// reason: `team`, `device_secret`, `subject_token` or `session` (the last two mean: sign
    /// in again).
    static func refusal(_ reason: String, _ detail: String) -> OAuthError {
        OAuthError.invalidGrant("\(reason): \(detail)")
    }
}

/// What the exchange reads of the ID token it is given (section 4.3): its signature by one of
/// the realm's keys is checked, its expiry is not (an app may hold a teammate's ID token long
/// after it expired; the device session's liveness is what counts).
struct DeviceSSOSubjectClaims: JWTPayload {
    var iss: IssuerClaim
    var sub: SubjectClaim
    var aud: AudienceClaim
    var sid: String?
    var dsHash: String?

    enum CodingKeys: String, CodingKey {
        case iss, sub, aud, sid
        case dsHash = "ds_hash"
    }

    func verify(using algorithm: some JWTAlgorithm) throws {}
}
