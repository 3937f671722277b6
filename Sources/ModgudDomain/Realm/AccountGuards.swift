/// The guards a realm may add beyond the native-app guide (issue 65): each one off by default,
/// so an app written from the guide (`../shared/seeds/001_…`) and Auth0's Native Passkeys API
/// works as written; an operator turns one on for a reason of their own. docs/api.md's guards
/// table lists each, its default, what turns it on and its exact answer.
public struct AccountGuards: Codable, Hashable, Sendable {
    /// Changing a person's passkeys (enroll, rename, delete; the `/connect/passkey` endpoints
    /// and My Account alike) needs a sign-in at most `SessionLimits.enrollmentFreshnessMinutes`
    /// old, else RFC 9470's 401 `insufficient_user_authentication` with `max_age`. Off by
    /// default: the guide promises 204 for a delete with any valid token, and a refresh keeps
    /// the sign-in's `auth_time`, so the rule would sign people out of the apps it protects.
    public var passkeyStepUp: Bool
    /// The account endpoints take only a token whose audience is the app itself or My Account
    /// (RFC 9700 section 2.3), else 401 `invalid_token`. Off by default: the guide tells the
    /// app to send "the same access token the app already holds", which `resource` may have
    /// narrowed to an API (docs/decisions.md, "Account endpoints and audiences").
    public var accountAudience: Bool

    public init(passkeyStepUp: Bool = false, accountAudience: Bool = false) {
        self.passkeyStepUp = passkeyStepUp
        self.accountAudience = accountAudience
    }

    private enum CodingKeys: String, CodingKey {
        case passkeyStepUp, accountAudience
    }

    /// Guards recorded before a member existed decode with its default (off).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        passkeyStepUp = try container.decodeIfPresent(Bool.self, forKey: .passkeyStepUp) ?? false
        accountAudience = try container.decodeIfPresent(Bool.self, forKey: .accountAudience) ?? false
    }
}
