import Foundation
import ModgudDomain
import ModgudService

/// How Auth0's Native Passkeys API (seed 002) maps onto Modgud (issue 14), so an app built on
/// it works by changing its domain and client id. Pure functions; the routes are
/// `Auth0PasskeyController` and the token endpoint.
///
/// - `grant_type=urn:okta:params:oauth:grant-type:webauthn` is the passkey grant: a client
///   needs `urn:cocoar:passkey` for it. `auth_session` is the ceremony id; an `authn_response`
///   holding an `attestationObject` signs up, one holding a signature signs in.
/// - `realm` and `connection` (Auth0: a connection name) may be omitted or name one of the
///   realm's connections: its id, `email`, `Username-Password-Authentication`, and any the
///   operator added (`RealmSettings.connections`); anything else is `invalid_request`.
/// - `audience` is an RFC 8707 `resource`, checked against the client's audiences.
/// - `offline_access` is dropped from `scope` unless the client allows it: Modgud always
///   issues a refresh token to a user grant.
enum Auth0Compatibility {
    static let webauthnGrant = "urn:okta:params:oauth:grant-type:webauthn"
    static let passwordlessOTPGrant = "http://auth0.com/oauth/grant-type/passwordless/otp"

    /// The connection names every realm answers to besides its own id: Auth0's passwordless
    /// email connection and its default database connection (what Auth0 apps send).
    static let defaultConnections = ["email", "Username-Password-Authentication"]

    /// The connection names a realm answers to.
    static func connections(of realm: RealmDirectory.Entry) -> [String] {
        [realm.realmID] + defaultConnections + realm.settings.connections
    }

    /// Auth0's `realm` (or `connection`): absent, or one of the realm's connection names.
    static func checkRealm(_ name: String?, realm: RealmDirectory.Entry) throws(OAuthError) {
        guard let name, !name.isEmpty, !connections(of: realm).contains(name) else { return }
        throw .invalidRequest(
            "Unknown connection '\(name)': this host serves realm '\(realm.realmID)' (connections: "
                + connections(of: realm).joined(separator: ", ") + ").")
    }

    /// The resources of an Auth0-shaped token request: `resource` values and `audience`.
    static func resources(_ form: FormBody, realm: RealmDirectory.Entry) throws(OAuthError) -> [String] {
        try checkRealm(form["realm"], realm: realm)
        return form.all("resource") + (form["audience"].map { [$0] } ?? [])
    }

    /// Auth0's scope with `offline_access` removed when the client does not allow it.
    static func scope(_ requested: String?, client: ClientSettings) -> String? {
        guard let requested, !client.allowedScopes.contains("offline_access") else { return requested }
        return requested.split(separator: " ").filter { $0 != "offline_access" }.joined(separator: " ")
    }

    /// Whether an `authn_response` is an attestation (a sign-up) rather than an assertion.
    static func isAttestation(_ json: String) -> Bool {
        struct Probe: Decodable {
            struct Response: Decodable { var attestationObject: String? }
            var response: Response?
        }
        return (try? JSONDecoder().decode(Probe.self, from: Data(json.utf8)))?.response?.attestationObject != nil
    }

    /// Auth0's `user_profile`: `email` (required) and `name`; `given_name` and `family_name`
    /// map onto the realm's first and last name fields. Other identifiers (Auth0's Flexible
    /// Identifiers: `phone_number`, `username`) are refused: Modgud identifies users by email.
    static func signUpRequest(_ profile: [String: StrictJSON.AnyJSONValue]) throws(OAuthError) -> PasskeyService.SignUpRequest {
        var texts: [String: String] = [:]
        for (name, value) in profile {
            guard ["email", "name", "given_name", "family_name"].contains(name) else {
                throw .invalidRequest("user_profile.\(name) is not supported: users are identified by email.")
            }
            switch value {
            case .string(let text): texts[name] = text
            case .null: continue
            default: throw .invalidRequest("user_profile.\(name) is a string.")
            }
        }
        guard let email = texts["email"] else { throw .invalidRequest("user_profile.email is required.") }
        return PasskeyService.SignUpRequest(email: email, firstName: texts["given_name"], lastName: texts["family_name"], displayName: texts["name"])
    }
}
