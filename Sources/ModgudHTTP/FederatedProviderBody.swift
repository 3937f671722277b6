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

    init(_ provider: FederatedProvider) {
        Id = provider.id
        Kind = provider.kind.rawValue
        Issuer = provider.issuer
        JwksUrl = provider.jwksURL
        Audiences = provider.audiences
        Linking = provider.linking.rawValue
        RequireNonce = provider.requireNonce
    }

    func provider() throws(AdminProblem) -> FederatedProvider {
        guard let kind = FederatedProvider.Kind(rawValue: Kind) else {
            throw AdminProblem("Federation.InvalidKind", "A provider's Kind is apple, google or oidc.")
        }
        let defaults: FederatedProvider? =
            switch kind {
            case .apple: .apple(audiences: Audiences)
            case .google: .google(audiences: Audiences)
            case .oidc: nil
            }
        guard let issuer = Issuer ?? defaults?.issuer, let jwks = JwksUrl ?? defaults?.jwksURL else {
            throw AdminProblem("Federation.IssuerRequired", "An oidc provider needs its Issuer and JwksUrl.")
        }
        var linking = FederatedProvider.Linking.emailCode
        if let Linking {
            guard let chosen = FederatedProvider.Linking(rawValue: Linking) else {
                throw AdminProblem("Federation.InvalidLinking", "Linking is EmailCode, VerifiedEmail or Never.")
            }
            linking = chosen
        }
        return FederatedProvider(
            id: Id, kind: kind, issuer: issuer, jwksURL: jwks, audiences: Audiences, linking: linking, requireNonce: RequireNonce ?? true)
    }
}
