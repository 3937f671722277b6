import ModgudDomain

/// Scope and resource-indicator checks shared by every grant (RFC 6749 section 3.3, RFC 8707).
enum ScopePolicy {
    /// The requested scopes, each of which the client must be allowed (`invalid_scope`).
    /// `device_sso` (Native SSO) is any client's to ask for: the sign-in grants it only to a
    /// client in a team of the realm (`NativeSSO.session`), and its response's `scope` says
    /// whether it did (RFC 6749 section 3.3).
    static func grantedScopes(requested: String?, client: ClientSettings) throws(OAuthError) -> [String] {
        guard let requested, !requested.isEmpty else { return client.allowedScopes.sorted() }
        var scopes: [String] = []
        for scope in tokens(requested) where !scopes.contains(scope) {
            guard client.allowedScopes.contains(scope) || scope == NativeSSO.scope else { throw .invalidScope("The scope '\(scope)' is not allowed for this client.") }
            scopes.append(scope)
        }
        return scopes
    }

    /// The audiences of a sign-in: the requested resources, each one of the client's audiences
    /// or the client itself (`invalid_target`); without any, the client's default audience, or
    /// the client itself when it has none (issue 41: a token is never for every audience of
    /// its client, My Account's included, unless asked).
    static func audiences(resources: [String], client: ClientSettings, clientID: String) throws(OAuthError) -> [String] {
        guard !resources.isEmpty else { return [client.defaultAudience ?? clientID] }
        let permitted = client.audiences.union([clientID])
        for resource in resources where !permitted.contains(resource) {
            throw .invalidTarget("The resource '\(resource)' is not an audience this client may ask for.")
        }
        return Array(Set(resources)).sorted()
    }

    /// The OpenID Connect scopes: they describe the sign-in, not an API, and go with the grant
    /// to whichever audience a refresh switches to.
    static let identityScopes: Set<String> = ["openid", "profile", "email", "address", "phone", "offline_access"]

    /// What a refresh's new access token is for (RFC 6749 section 6, RFC 8707 section 2.2).
    ///
    /// Without resources, the grant's audiences; resources among them narrow them. A resource
    /// outside them is allowed by the client's refresh policy for it (Auth0's multi-resource
    /// refresh), alone: the token is then for that audience, with the policy's scopes and the
    /// grant's identity scopes. Otherwise, when the sign-in named no resource
    /// (`namedNoResource`), its grant allows each audience the client is permitted (its
    /// `Audiences` and itself; issue 65: the guide's refresh carries `resource=<api-audience>`
    /// after a sign-in without one), with the grant's scopes. Anything else is `invalid_target`.
    ///
    /// Without a scope, the grant's scopes (or, on a switch, the policy's and the grant's
    /// identity scopes); a requested scope must be among those, or it is `invalid_scope`: a
    /// refresh never widens what the sign-in or the operator's policy granted.
    static func refreshed(
        requestedScope: String?, resources: [String], granted: (scopes: [String], audiences: [String]), client: ClientSettings, clientID: String,
        namedNoResource: Bool
    ) throws(OAuthError) -> (scopes: [String], audiences: [String]) {
        let requested = Array(Set(resources)).sorted()
        let audiences: [String]
        var available: [String]
        if requested.isEmpty || requested.allSatisfy(granted.audiences.contains) {
            audiences = requested.isEmpty ? granted.audiences : requested
            available = granted.scopes
        } else if requested.count == 1, let policy = client.refreshPolicy(for: requested[0]) {
            audiences = [policy.audience]
            available = granted.scopes.filter(identityScopes.contains)
            for scope in policy.scopes where client.allowedScopes.contains(scope) && !available.contains(scope) { available.append(scope) }
        } else if namedNoResource, requested.allSatisfy(client.audiences.union([clientID]).contains) {
            audiences = requested
            available = granted.scopes
        } else {
            let outside = requested.first { !granted.audiences.contains($0) } ?? requested[0]
            throw .invalidTarget("The resource '\(outside)' is not an audience of this grant, and no refresh policy of the client allows it.")
        }
        guard let requestedScope, !requestedScope.isEmpty else { return (available, audiences) }
        var scopes: [String] = []
        for scope in tokens(requestedScope) where !scopes.contains(scope) {
            guard available.contains(scope) else { throw .invalidScope("The scope '\(scope)' was not granted for this audience.") }
            scopes.append(scope)
        }
        return (scopes, audiences)
    }

    private static func tokens(_ scope: String) -> [String] {
        scope.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
    }
}
