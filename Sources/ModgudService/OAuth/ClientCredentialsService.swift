import EventSourcing
import Foundation
import ModgudDomain

/// A service client's own tokens (RFC 6749 section 4.4; issue 68, out of `TokenService`): no
/// person, no refresh token, no ID token.
public struct ClientCredentialsService: Sendable {
    let families: AggregateRegistry<TokenFamily>
    let minter: TokenMinter
    let realms: RealmDirectory
    let now: @Sendable () -> Date

    /// grant_type=client_credentials: a service client's own token, no refresh token, no ID token.
    public func clientCredentials(
        client: AuthenticatedClient, scope: String?, resources: [String], issuer: String, metadata: EventMetadata, dpopKey: String? = nil
    ) async throws -> TokenResponse {
        guard client.settings.grants.contains(.clientCredentials) else {
            throw OAuthError.unauthorizedClient("The client may not use grant_type client_credentials.")
        }
        let scopes = try ScopePolicy.grantedScopes(requested: scope, client: client.settings).filter { $0 != "openid" && $0 != "offline_access" && $0 != NativeSSO.scope }
        let audiences = try ScopePolicy.audiences(resources: resources, client: client.settings, clientID: client.id)
        let lifetimes = TokenLifetimes(try await realms.requiredSettings(client.realm))
        let time = now()
        let minted = try await minter.mint(
            TokenMinter.Request(
                realm: client.realm, issuer: issuer, clientID: client.id, format: client.settings.accessTokenFormat, user: nil,
                scopes: scopes, audiences: audiences, authTime: time, amr: [], accessLifetime: lifetimes.access, refreshLifetime: nil,
                dpopKey: dpopKey, attestation: client.attestation),
            now: time)
        let familyID = UUID()
        _ = try await families.actor(forNew: StreamNames.tokenFamily(realm: client.realm, familyID: familyID)).execute(
            .start(
                TokenFamilyStarted(
                    familyID: familyID, clientID: client.id, userID: nil, scopes: scopes, audiences: audiences,
                    grantType: GrantType.clientCredentials.rawValue, authTime: time, amr: [], securityStamp: nil,
                    accessToken: minted.accessRecord)), now: time, metadata: metadata)
        return TokenResponse(accessToken: minted.accessToken, tokenType: minted.tokenType, expiresIn: minted.expiresIn, scope: scopes.joined(separator: " "))
    }
}
