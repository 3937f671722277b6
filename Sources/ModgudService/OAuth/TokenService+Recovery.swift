import Foundation
import ModgudDomain

/// The session a recovery code gives (issue 46).
extension TokenService {
    /// The one scope of a recovery session: Modgud's own endpoints read it as "may enroll a
    /// passkey and manage sessions, nothing else", and no API is granted it.
    public static let recoveryScope = "urn:modgud:recovery"
    /// A recovery session's access token lives at most this long (and has no refresh token):
    /// long enough to enroll a passkey, which then signs in for real.
    public static let recoveryLifetime: TimeInterval = 900

    /// A recovery session minted but not written (the caller commits it with the spent code):
    /// an access token for the client itself with `recoveryScope` only, `acr`
    /// `urn:modgud:acr:recovery`, `amr` `otp`, no refresh token and no ID token.
    public func prepareRecoverySession(client: AuthenticatedClient, user: User.State, issuer: String, dpopKey: String?) async throws -> PreparedSignIn {
        guard let userID = user.id, user.canSignIn else { throw OAuthError.invalidGrant("The account cannot sign in.") }
        let lifetimes = TokenLifetimes(try await realmSettings(client.realm))
        let time = now()
        let scopes = [Self.recoveryScope]
        let minted = try await minter.mint(
            TokenMinter.Request(
                realm: client.realm, issuer: issuer, clientID: client.id, format: client.settings.accessTokenFormat, user: user, scopes: scopes,
                audiences: [client.id], authTime: time, amr: AuthenticationContext.recoveryAMR,
                accessLifetime: min(lifetimes.access, Self.recoveryLifetime), refreshLifetime: nil, dpopKey: dpopKey,
                acr: AuthenticationContext.recovery, attestation: client.attestation), now: time)
        let familyID = UUID()
        let started = TokenFamilyStarted(
            familyID: familyID, clientID: client.id, userID: userID, scopes: scopes, audiences: [client.id], grantType: GrantType.recoveryCode.rawValue,
            authTime: time, amr: AuthenticationContext.recoveryAMR, securityStamp: user.securityStamp, accessToken: minted.accessRecord,
            acr: AuthenticationContext.recovery)
        return PreparedSignIn(
            stream: StreamNames.tokenFamily(realm: client.realm, familyID: familyID), started: started,
            response: TokenResponse(
                accessToken: minted.accessToken, tokenType: minted.tokenType, expiresIn: minted.expiresIn, refreshToken: nil,
                scope: Self.recoveryScope, idToken: nil, signIn: .init(userID: userID, familyID: familyID)))
    }
}
