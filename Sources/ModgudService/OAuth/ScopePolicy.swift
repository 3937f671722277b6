import ModgudDomain

/// Scope and resource-indicator checks shared by every grant (RFC 6749 section 3.3, RFC 8707).
enum ScopePolicy {
    /// The requested scopes, each of which the client must be allowed (`invalid_scope`).
    static func grantedScopes(requested: String?, client: ClientSettings) throws(OAuthError) -> [String] {
        guard let requested, !requested.isEmpty else { return client.allowedScopes.sorted() }
        var scopes: [String] = []
        for scope in requested.split(separator: " ", omittingEmptySubsequences: true).map(String.init) where !scopes.contains(scope) {
            guard client.allowedScopes.contains(scope) else { throw .invalidScope("The scope '\(scope)' is not allowed for this client.") }
            scopes.append(scope)
        }
        return scopes
    }

    /// The audiences: the requested resources, each allowed for the client (`invalid_target`);
    /// without any, the client's audiences plus the client itself.
    static func audiences(resources: [String], allowed: Set<String>, clientID: String) throws(OAuthError) -> [String] {
        let permitted = allowed.union([clientID])
        guard !resources.isEmpty else { return permitted.sorted() }
        for resource in resources where !permitted.contains(resource) {
            throw .invalidTarget("The resource '\(resource)' is not an audience this client may ask for.")
        }
        return Array(Set(resources)).sorted()
    }
}
