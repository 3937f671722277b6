import ModgudDomain

/// A realm's identity provider in the admin API (issue 48): `{"Id", "Kind", "Issuer"?,
/// "JwksUrl"?, "Audiences", "Linking"?, "RequireNonce"?}`. Kinds `apple` and `google` default
/// their issuer and JWKS URL to Apple's and Google's published ones (override them only for
/// tests); `oidc` needs both.
struct FederatedProviderBody: Codable {
    var Id: String
    var Kind: String
    var Issuer: String?
    var JwksUrl: String?
    var Audiences: [String]
    /// `EmailCode` (the default), `VerifiedEmail` or `Never`.
    var Linking: String?
    var RequireNonce: Bool?
    /// Apple only, read-only here: the token endpoint Apple's authorization codes are redeemed
    /// at (set with `PUT …/federated-providers/{id}/apple-key`; the key itself is never shown).
    var AppleTokenEndpoint: AppleTokenEndpointView?

    struct AppleTokenEndpointView: Codable {
        var TeamId: String
        var KeyId: String
        var ClientId: String
        var TokenUrl: String
        /// The key's public half (PEM).
        var PublicKey: String
    }

    /// `PUT /admin/api/realms/{realm}/federated-providers/{id}/apple-key`.
    struct AppleKeyBody: Decodable {
        var TeamId: String
        var KeyId: String
        var ClientId: String
        /// The .p8 file's text (PKCS#8 PEM).
        var PrivateKey: String
        var TokenUrl: String?
        static let members: Set<String> = ["TeamId", "KeyId", "ClientId", "PrivateKey", "TokenUrl"]
    }

    init(_ provider: FederatedProvider) {
        Id = provider.id
        Kind = provider.kind.rawValue
        Issuer = provider.issuer
        JwksUrl = provider.jwksURL
        Audiences = provider.audiences
        Linking = provider.linking.rawValue
        RequireNonce = provider.requireNonce
        AppleTokenEndpoint = provider.appleTokenEndpoint.map {
            AppleTokenEndpointView(TeamId: $0.teamID, KeyId: $0.keyID, ClientId: $0.clientID, TokenUrl: $0.tokenURL, PublicKey: $0.publicKey)
        }
    }

    func provider() throws(AdminProblem) -> FederatedProvider {
        guard let kind = FederatedProvider.Kind(rawValue: Kind) else {
            throw AdminProblem("Federation.InvalidKind", "A provider's Kind is apple, google or oidc.")
        }
        do {
            return try FederatedProvider.configured(
                id: Id, kind: kind, issuer: Issuer, jwksURL: JwksUrl, audiences: Audiences, linking: Linking, requireNonce: RequireNonce)
        } catch {
            throw AdminProblem(error.code, error.message)
        }
    }
}
