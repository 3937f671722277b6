import Hummingbird
import ModgudDomain
import ModgudService

/// GET /.well-known/openid-configuration (OpenID Connect Discovery 1.0), the same document at
/// /.well-known/oauth-authorization-server (RFC 8414), /.well-known/jwks.json, per realm host;
/// and /connect/authorize, which serves no browser flow (issue 25).
struct DiscoveryController: Sendable {
    let keys: SigningKeyRing
    let parsing: RequestParsing
    /// The rendered document per issuer and grant list (issue 12: rendered once, not per request).
    let rendered = SettingsCache<String, ByteBuffer>(maxAge: .seconds(60))

    struct Metadata: Encodable {
        var issuer: String
        /// Required by OpenID Connect Discovery and by strict clients (AppAuth's
        /// `OIDServiceDiscovery`); it answers `unsupported_response_type` (`authorize`).
        var authorizationEndpoint: String
        var tokenEndpoint: String
        var introspectionEndpoint: String
        var revocationEndpoint: String
        var userinfoEndpoint: String
        var jwksURI: String
        /// RFC 8628 section 4 (issue 69).
        var deviceAuthorizationEndpoint: String
        var grantTypesSupported: [String]
        /// draft-ietf-oauth-first-party-apps section 4.1 (issue 45): only while the realm's
        /// native grants are on, as the grants it ends in.
        var authorizationChallengeEndpoint: String?
        /// RFC 8414 section 2, for the challenge endpoint's PKCE (S256 only).
        var codeChallengeMethodsSupported: [String]?
        /// draft-ietf-oauth-attestation-based-client-auth-10 section 8: `attest_jwt_client_auth`
        /// (a Client Attestation PoP JWT) and `attest_jwt_client_auth_dpop` (the DPoP proof as
        /// the PoP, "combined mode", section 5.2).
        var tokenEndpointAuthMethodsSupported = [
            "none", "client_secret_basic", "client_secret_post", "attest_jwt_client_auth", "attest_jwt_client_auth_dpop",
        ]
        /// The same draft, sections 6.1 and 8 (issue 47): the challenge endpoint, and the
        /// algorithms of attestations (this realm's keys) and PoPs.
        var challengeEndpoint: String?
        var clientAttestationSigningAlgValuesSupported = ["ES256", "RS256"]
        var clientAttestationPoPSigningAlgValuesSupported = DPoPKey.Algorithm.allCases.map(\.rawValue)
        /// Sections 7.6 and 13.5 (issue 66): the PoP methods accepted. `none`: a client whose
        /// attestation is not `required` may send none (per client, guides/genuine-apps.md).
        var clientAttestationPoPMethodsSupported = ["attestation_pop_jwt", "dpop_combined", "none"]
        var idTokenSigningAlgValuesSupported = ["ES256", "RS256"]
        /// RFC 9449 section 5.1: the algorithms of DPoP proofs the token endpoint checks.
        var dpopSigningAlgValuesSupported = DPoPKey.Algorithm.allCases.map(\.rawValue)
        var subjectTypesSupported = ["public"]
        /// RFC 8414 section 2 (REQUIRED): the response types this server accepts. `code` where
        /// the realm's native grants are on: the Authorization Challenge Endpoint takes
        /// `response_type=code` (draft-ietf-oauth-first-party-apps section 5.1), the only
        /// request here that names a response type (`/connect/authorize` serves none). With
        /// them off no request gets a code or a token: `none` (OAuth 2.0 Multiple Response Type
        /// Encoding Practices section 4), as the member is required and strict validators
        /// (Authlib) refuse it empty.
        var responseTypesSupported: [String]
        var scopesSupported = ["openid", "email", "profile", "offline_access"]
        var claimsSupported = ["sub", "iss", "aud", "exp", "iat", "auth_time", "amr", "acr", "email", "email_verified", "given_name",
            "family_name", "preferred_username"]
        /// OpenID Connect Discovery section 3 (issue 46): Modgud's `acr` values, weakest first.
        var acrValuesSupported = AuthenticationContext.supported
        /// OpenID Connect Native SSO for Mobile Apps, draft 07 section 5 (issue 69): true where
        /// the realm has a team of apps; absent otherwise.
        var nativeSSOSupported: Bool?

        enum CodingKeys: String, CodingKey {
            case issuer
            case authorizationEndpoint = "authorization_endpoint"
            case tokenEndpoint = "token_endpoint"
            case introspectionEndpoint = "introspection_endpoint"
            case revocationEndpoint = "revocation_endpoint"
            case userinfoEndpoint = "userinfo_endpoint"
            case jwksURI = "jwks_uri"
            case deviceAuthorizationEndpoint = "device_authorization_endpoint"
            case grantTypesSupported = "grant_types_supported"
            case authorizationChallengeEndpoint = "authorization_challenge_endpoint"
            case codeChallengeMethodsSupported = "code_challenge_methods_supported"
            case tokenEndpointAuthMethodsSupported = "token_endpoint_auth_methods_supported"
            case challengeEndpoint = "challenge_endpoint"
            case clientAttestationSigningAlgValuesSupported = "client_attestation_signing_alg_values_supported"
            case clientAttestationPoPSigningAlgValuesSupported = "client_attestation_pop_signing_alg_values_supported"
            case clientAttestationPoPMethodsSupported = "client_attestation_pop_methods_supported"
            case idTokenSigningAlgValuesSupported = "id_token_signing_alg_values_supported"
            case dpopSigningAlgValuesSupported = "dpop_signing_alg_values_supported"
            case subjectTypesSupported = "subject_types_supported"
            case responseTypesSupported = "response_types_supported"
            case scopesSupported = "scopes_supported"
            case claimsSupported = "claims_supported"
            case acrValuesSupported = "acr_values_supported"
            case nativeSSOSupported = "native_sso_supported"
        }
    }

    func configuration(_ request: Request, context: ModgudRequestContext) async -> Response {
        do {
            let (realm, issuer) = try await parsing.realm(request)
            // Better than the original server: the native grants are listed only when enabled.
            let grants = GrantRegistry.standard.advertised(nativeGrantsEnabled: realm.settings.nativeGrants.enabled)
            let nativeSSO = realm.settings.nativeSSOTeams?.isEmpty == false
            let body = try await rendered.value(for: issuer + " " + grants.joined(separator: " ") + (nativeSSO ? " sso" : "")) {
                let base = RequestParsing.base(of: issuer)
                var document = Metadata(
                    issuer: issuer, authorizationEndpoint: base + "/connect/authorize", tokenEndpoint: base + "/connect/token", introspectionEndpoint: base + "/connect/introspect",
                    revocationEndpoint: base + "/connect/revoke", userinfoEndpoint: base + "/connect/userinfo",
                    jwksURI: base + "/.well-known/jwks.json", deviceAuthorizationEndpoint: base + DeviceGrantPaths.authorization, grantTypesSupported: grants,
                    authorizationChallengeEndpoint: realm.settings.nativeGrants.enabled ? base + FirstPartyPaths.challenge : nil,
                    codeChallengeMethodsSupported: realm.settings.nativeGrants.enabled ? ["S256"] : nil,
                    challengeEndpoint: base + ClientAttestationPaths.challenge,
                    responseTypesSupported: realm.settings.nativeGrants.enabled ? ["code"] : ["none"])
                if nativeSSO {
                    document.nativeSSOSupported = true
                    document.scopesSupported.append(NativeSSO.scope)
                }
                return ByteBuffer(bytes: try OAuthResponses.encode(document))
            }
            return OAuthResponses.json(rendered: body)
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch {
            return ServerFailure.problem(error, context: context, endpoint: "discovery")
        }
    }

    /// GET|POST /connect/authorize: Modgud signs users in from native apps at the token
    /// endpoint; there is no browser authorization flow. No redirect URI is ever registered, so
    /// the error is shown here, never redirected (RFC 6749 section 4.1.2.1).
    func authorize(_ request: Request, context: ModgudRequestContext) async -> Response {
        do {
            _ = try await parsing.realm(request)
            var response = OAuthResponses.error(
                .unsupportedResponseType(
                    "There is no browser sign-in here: native apps sign in at the token endpoint (email code, magic link or passkey)."))
            response.headers[.cacheControl] = "no-store"
            return response
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch {
            return ServerFailure.problem(error, context: context, endpoint: "authorize")
        }
    }

    func jwks(_ request: Request, context: ModgudRequestContext) async -> Response {
        do {
            let (realm, _) = try await parsing.realm(request)
            var headers = HTTPFields()
            headers[.contentType] = "application/jwk-set+json"
            headers[.cacheControl] = "public, max-age=300"
            let body = try await keys.jwks(realm: realm.realmID)
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
        } catch RequestParsing.Failure.response(let response) {
            return response
        } catch {
            return ServerFailure.problem(error, context: context, endpoint: "jwks")
        }
    }
}
