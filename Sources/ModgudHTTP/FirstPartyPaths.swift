/// Where OAuth 2.0 for First-Party Applications lives (issue 45): the route and what
/// discovery publishes as `authorization_challenge_endpoint`.
enum FirstPartyPaths {
    static let challenge = "/connect/authorization-challenge"
}
