import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(CryptoKit)
import CryptoKit
#else
import Crypto
#endif

/// What the server asks for next in a first-party sign-in, or how it ended.
public enum FirstPartyStep: Sendable, Equatable {
    /// A six-digit code was mailed (if the address may sign in): `submit(emailCode:)`.
    case emailCodeSent
    /// A link was mailed: `submit(magicLink:)` with the URL the app was opened with.
    case magicLinkSent
    /// A passkey assertion is wanted: `submit(passkeyUsing:)`.
    case passkeyRequested
    /// The person has two-factor authentication on: `submit(totpCode:)`.
    case secondFactorRequired
    /// The realm needs more before it signs the person up (the registration fields it requires,
    /// by their parameter names: `given_name`, `family_name`): `submit(fields:)`.
    case informationRequired([String])
    /// The server wants the person in a browser (the draft's `redirect_to_web`): start an
    /// authorization code flow there, with `requestURI` when the server gave one; a Modgud
    /// realm names its web sign-in in `webURI`.
    case redirectToWeb(requestURI: String?, webURI: URL?)
    /// Signed in: the session is stored and used by the client from now on.
    case signedIn(ModgudSession)
}

/// A sign-in by OAuth 2.0 for First-Party Applications (draft-ietf-oauth-first-party-apps,
/// docs/guides/first-party-apps.md): the standard, step-by-step form of the native grants, for
/// an app whose own UI asks for the address, the code, the passkey and the second factor.
///
/// One flow is one sign-in: it makes its PKCE pair (RFC 7636, S256), keeps the server's
/// `auth_session` between steps, sends a DPoP proof on every request when the client has a
/// key (the session, the code and the tokens are bound to it), and redeems the authorization
/// code at the token endpoint with its verifier. Begin with `start(email:)` or
/// `startWithPasskey()`; each call answers the next `FirstPartyStep`.
public actor FirstPartyFlow {
    /// How `start(email:delivery:)` reaches the person.
    public enum Delivery: String, Sendable {
        case code
        case link
    }

    let client: ModgudClient
    let verifier: String
    private(set) var authSession: String?
    /// The WebAuthn request options of the last `passkey_options`, as JSON.
    private var passkeyOptions: Data?

    init(client: ModgudClient) {
        self.client = client
        var bytes = SystemRandomNumberGenerator()
        verifier = Base64URL.encode(Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &bytes) }))
    }

    /// RFC 7636 section 4.2.
    var challenge: String { Base64URL.encode(Data(SHA256.hash(data: Data(verifier.utf8)))) }

    /// The identifier step: the server mails a code (or a link) under its uniform rules.
    /// - Parameter fields: registration fields the realm requires of a new person
    ///   (`given_name`, `family_name`), sent with the address.
    public func start(email: String, delivery: Delivery = .code, fields: [String: String] = [:]) async throws -> FirstPartyStep {
        var request = await first() + [("login_hint", email)]
        if delivery == .link { request.append(("email_delivery", "link")) }
        return try await step(request + fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    /// A step-up (section 6.1; RFC 9470): when an API answers `insufficient_user_authentication`,
    /// the person proves themselves again with a code to their own address; the server answers
    /// `.emailCodeSent`, and `submit(emailCode:)` replaces the session with a fresh one.
    /// - Parameters: `maxAge` and `acrValues` as the API's challenge named them.
    /// - Throws: `.notSignedIn` without a session from a first-party sign-in.
    public func stepUp(maxAge: Int? = nil, acrValues: String? = nil) async throws -> FirstPartyStep {
        guard let stored = try await client.currentSession()?.authSession else { throw ModgudError.notSignedIn }
        var request = await first()
        request.append(("auth_session", stored))
        if let maxAge { request.append(("max_age", String(maxAge))) }
        if let acrValues { request.append(("acr_values", acrValues)) }
        return try await step(request)
    }

    /// A usernameless passkey sign-in: the server answers `.passkeyRequested` with its options.
    public func startWithPasskey() async throws -> FirstPartyStep {
        try await step(await first())
    }

    public func submit(emailCode: String) async throws -> FirstPartyStep {
        try await step(try continuing() + [("email_code", emailCode)])
    }

    /// The magic link as the app was opened with it (`…/magic-login?userId=…&token=…`).
    public func submit(magicLink: URL) async throws -> FirstPartyStep {
        let items = URLComponents(url: magicLink, resolvingAgainstBaseURL: false)?.queryItems ?? []
        guard let userID = items.first(where: { $0.name == "userId" })?.value, let token = items.first(where: { $0.name == "token" })?.value else {
            throw ModgudError.invalidLink
        }
        return try await step(try continuing() + [("user_id", userID), ("magic_token", token)])
    }

    public func submit(totpCode: String) async throws -> FirstPartyStep {
        try await step(try continuing() + [("totp_code", totpCode)])
    }

    /// Answers `.informationRequired`.
    public func submit(fields: [String: String]) async throws -> FirstPartyStep {
        try await step(try continuing() + fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    /// Answers `.passkeyRequested` with the authenticator's assertion.
    public func submit(passkeyUsing authenticator: some PasskeyAuthenticator) async throws -> FirstPartyStep {
        guard let passkeyOptions, let options = (try? JSONSerialization.jsonObject(with: passkeyOptions)) as? [String: Any] else {
            throw ModgudError.invalidResponse(status: 0, body: "no passkey was requested")
        }
        let assertion = try await authenticator.authenticate(try PasskeyJSON.assertion(options))
        return try await step(try continuing() + [("passkey_assertion", assertion.json)])
    }

    // MARK: The exchange

    /// Section 5.1: the first request (and a step-up's) carries `response_type=code` (REQUIRED
    /// since draft -03), the client, the scope and the PKCE challenge.
    private func first() async -> [(String, String)] {
        authSession = nil
        passkeyOptions = nil
        return [
            ("response_type", "code"), ("client_id", client.configuration.clientID), ("scope", client.configuration.scope),
            ("code_challenge", challenge), ("code_challenge_method", "S256"),
        ]
    }

    private func continuing() throws -> [(String, String)] {
        guard let authSession else { throw ModgudError.invalidResponse(status: 0, body: "the flow has not started") }
        return [("client_id", client.configuration.clientID), ("auth_session", authSession)]
    }

    /// One request and its answer (section 5.2): a code is redeemed at once; an error with an
    /// `auth_session` keeps it for the next step.
    private func step(_ fields: [(String, String)]) async throws -> FirstPartyStep {
        let (data, response) = try await client.exchangeAtChallengeEndpoint(fields)
        let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        if response.statusCode == 200, let code = object["authorization_code"] as? String {
            authSession = nil
            return .signedIn(try await client.redeemAuthorizationCode(code, verifier: verifier))
        }
        if let session = object["auth_session"] as? String { authSession = session }
        switch object["error"] as? String {
        case "insufficient_authorization":
            let expecting = object["expecting"] as? [String] ?? []
            if let options = object["passkey_options"] { passkeyOptions = try? JSONSerialization.data(withJSONObject: options) }
            if expecting.contains("email_code") { return .emailCodeSent }
            if expecting.contains("magic_token") { return .magicLinkSent }
            if expecting.contains("passkey_assertion") { return .passkeyRequested }
            if expecting.contains("totp_code") { return .secondFactorRequired }
            return .informationRequired(expecting)
        case "redirect_to_web":
            authSession = nil
            return .redirectToWeb(requestURI: object["request_uri"] as? String, webURI: (object["web_uri"] as? String).flatMap(URL.init(string:)))
        default:
            throw ModgudClient.error(response, data)
        }
    }
}

extension ModgudClient {
    /// A new first-party sign-in (draft-ietf-oauth-first-party-apps); see `FirstPartyFlow`.
    public func firstPartyFlow() -> FirstPartyFlow {
        FirstPartyFlow(client: self)
    }

    /// RFC 6749 section 4.1.3 with RFC 7636 section 4.5: the code for the session's tokens.
    func redeemAuthorizationCode(_ code: String, verifier: String) async throws -> ModgudSession {
        try await token([("grant_type", "authorization_code"), ("client_id", configuration.clientID), ("code", code), ("code_verifier", verifier)])
    }
}
