import Foundation
import Hummingbird
import ModgudDomain
import ModgudService

/// A person's linked provider accounts (issue 48; docs/api.md, "Linked identities"): Sign in
/// with Apple, Google or another OpenID provider linked to their account.
///
/// - `GET /connect/identities`: `[{"provider", "kind", "linkedAt"}]`, oldest first;
/// - `DELETE /connect/identities/{provider}`: unlinks it (204; 404 when none is linked).
///   Needs a fresh sign-in, as deleting a passkey does. The sessions it started stay; the
///   account keeps its address, so an email code still signs the person in.
///
/// With an access token for the app or My Account. The same under My Account's path
/// (`/me/v1/identities`), authorised as My Account's routes are: its audience, and
/// `read:me:authentication_methods` or `delete:me:authentication_methods`.
struct IdentityController: Sendable {
    let federatedSignIn: @Sendable () throws -> FederatedSignIn
    let passkeys: PasskeyService
    let parsing: RequestParsing
    let resource: ProtectedResource

    struct IdentityBody: Encodable {
        /// The realm's provider id (`FederatedProviders[].Id`).
        var provider: String
        /// `apple`, `google` or `oidc`; absent when the realm no longer names the provider.
        var kind: String?
        var linkedAt: String
    }

    func register(on router: Router<ModgudRequestContext>) {
        router.get("/connect/identities") { request, context in await list(request, context, myAccount: nil) }
        router.delete("/connect/identities/:provider") { request, context in await unlink(request, context, myAccount: nil) }
        router.get("/me/v1/identities") { request, context in await list(request, context, myAccount: "read:me:authentication_methods") }
        router.delete("/me/v1/identities/:provider") { request, context in await unlink(request, context, myAccount: "delete:me:authentication_methods") }
    }

    func list(_ request: Request, _ context: ModgudRequestContext, myAccount scope: String?) async -> Response {
        await ProblemEdge.respondWithProblems(context) {
            let (realm, caller) = try await authorized(request, myAccount: scope)
            let format = Date.ISO8601FormatStyle()
            let kinds = Dictionary((realm.settings.federatedProviders ?? []).map { ($0.id, $0.kind.rawValue) }, uniquingKeysWith: { first, _ in first })
            let linked = try await federatedSignIn().identities(realm: realm.realmID, userID: caller.userID).map {
                IdentityBody(provider: $0.provider, kind: kinds[$0.provider], linkedAt: $0.linkedAt.formatted(format))
            }
            return OAuthResponses.json(linked)
        }
    }

    func unlink(_ request: Request, _ context: ModgudRequestContext, myAccount scope: String?) async -> Response {
        await ProblemEdge.respondWithProblems(context) {
            let (realm, caller) = try await authorized(request, myAccount: scope)
            try await passkeys.requireFreshSignIn(realm: realm, familyID: caller.familyID, scopes: caller.scopes)
            guard let provider = context.parameters.get("provider"),
                try await federatedSignIn().unlink(
                    realm: realm.realmID, userID: caller.userID, provider: provider, reason: "user", metadata: context.eventMetadata(actor: caller.userID))
            else { return Problem.response("Identity.NotFound", status: 404, detail: "No account of this provider is linked.") }
            return Response(status: .noContent)
        }
    }

    /// The caller: an app or My Account token on `/connect`, a My Account token with `scope` on `/me`.
    private func authorized(_ request: Request, myAccount scope: String?) async throws -> (RealmDirectory.Entry, Caller) {
        let (realm, issuer) = try await parsing.realm(request)
        guard realm.settings.nativeGrants.enabled else { throw RequestParsing.Failure.response(ProblemEdge.nativeGrantsDisabled()) }
        guard let scope else { return (realm, try await resource.accountCaller(request, realm: realm, issuer: issuer)) }
        return (realm, try await resource.myAccountCaller(request, realm: realm, issuer: issuer, scope: scope))
    }
}
