import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Signing in and up (docs/guides/passkeys-in-an-app.md; docs/spec.md sections 2–4).
extension ModgudClient {
    // MARK: Email code

    /// Asks for a sign-in code (or, for a new address where the realm allows it, a
    /// registration code). The answer is the same whether or not the address has an account.
    /// The request names the app's client: the code is this client's (and, with an
    /// `AttestedInstance`, this instance's) alone, and a client that requires attestation
    /// refuses an unattested request at once.
    /// - Parameter register: use the explicit registration endpoint (`ExplicitEndpoint` realms).
    public func requestCode(email: String, firstName: String? = nil, lastName: String? = nil, register: Bool = false) async throws {
        var body: [String: Any] = ["Email": email, "ClientId": configuration.clientID]
        if let firstName { body["FirstName"] = firstName }
        if let lastName { body["LastName"] = lastName }
        let path = register ? "/api/account/native/register" : "/api/account/native/otp/request"
        _ = try checked(try await exchange(Self.json(endpoint(path), body)))
    }

    /// Redeems the code (`urn:cocoar:otp`); with TOTP on, `.twoFactorRequired` asks for
    /// `totpCode` (the code stays usable). With `linkSession` (from
    /// `.linkRequiresEmailCode`), the sign-in also links that provider account.
    @discardableResult
    public func signIn(email: String, code: String, totpCode: String? = nil, linkSession: String? = nil) async throws -> ModgudSession {
        var fields = grant("urn:cocoar:otp") + [("username", email), ("otp_code", code)]
        if let totpCode { fields.append(("totp_code", totpCode)) }
        if let linkSession { fields.append(("link_session", linkSession)) }
        return try await token(fields)
    }

    // MARK: Magic link

    /// Asks for a magic link, for this app's client (and attested instance) alone.
    public func requestMagicLink(email: String) async throws {
        let body: [String: Any] = ["Email": email, "ClientId": configuration.clientID]
        _ = try checked(try await exchange(Self.json(endpoint("/api/account/magic-link/request"), body)))
    }

    /// Redeems a magic link (`urn:cocoar:magic`) as the app received it
    /// (`…/magic-login?userId=…&token=…`); with TOTP on, `.twoFactorRequired` asks for
    /// `totpCode` (the link stays usable: call again with the same link and the code).
    @discardableResult
    public func signIn(magicLink: URL, totpCode: String? = nil) async throws -> ModgudSession {
        let items = URLComponents(url: magicLink, resolvingAgainstBaseURL: false)?.queryItems ?? []
        guard let userID = items.first(where: { $0.name == "userId" })?.value, let token = items.first(where: { $0.name == "token" })?.value else {
            throw ModgudError.invalidLink
        }
        var fields = grant("urn:cocoar:magic") + [("user_id", userID), ("magic_token", token)]
        if let totpCode { fields.append(("totp_code", totpCode)) }
        return try await self.token(fields)
    }

    // MARK: Passkeys

    /// Usernameless passkey sign-in: begin, the authenticator's assertion, `urn:cocoar:passkey`.
    @discardableResult
    public func signInWithPasskey(using authenticator: some PasskeyAuthenticator) async throws -> ModgudSession {
        let begun = try await beginCeremony(Self.form(endpoint("/connect/passkey/begin"), [("client_id", configuration.clientID)]))
        let assertion = try await authenticator.authenticate(try PasskeyJSON.assertion(begun.options))
        return try await token(grant("urn:cocoar:passkey") + [("ceremony_id", begun.id), ("assertion", assertion.json)])
    }

    /// Passkey sign-up: a new account whose first factor is a passkey. Its address is
    /// unconfirmed until `confirmEmail(code:)`; until then the address's owner can take it
    /// back with a code. `.accountExists`: the address has an account, sign in instead.
    @discardableResult
    public func signUpWithPasskey(
        email: String, firstName: String? = nil, lastName: String? = nil, displayName: String? = nil, using authenticator: some PasskeyAuthenticator
    ) async throws -> ModgudSession {
        var body: [String: Any] = ["ClientId": configuration.clientID, "Email": email]
        if let firstName { body["FirstName"] = firstName }
        if let lastName { body["LastName"] = lastName }
        if let displayName { body["DisplayName"] = displayName }
        let begun = try await beginCeremony(Self.json(endpoint("/connect/passkey/register/begin"), body))
        let registration = try await authenticator.register(try PasskeyJSON.registration(begun.options))
        return try await token(grant("urn:cocoar:passkey") + [("ceremony_id", begun.id), ("attestation", registration.json)])
    }

    // MARK: Address confirmation

    /// Mails a confirmation code to the account's address; false when it is confirmed already.
    @discardableResult
    public func requestEmailConfirmation() async throws -> Bool {
        let (data, response) = try await send(Self.json(endpoint("/api/account/email/confirm/request"), nil).posting())
        let body = try checked((data, response))
        return ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["EmailConfirmed"] as? Bool != true
    }

    /// Confirms the address with the mailed code (`.invalidCode` otherwise).
    public func confirmEmail(code: String) async throws {
        _ = try checked(try await send(Self.json(endpoint("/api/account/email/confirm"), ["Code": code])))
    }

    // MARK: Helpers

    func grant(_ type: String) -> [(String, String)] {
        [("grant_type", type), ("client_id", configuration.clientID), ("scope", configuration.scope)]
    }

    func token(_ fields: [(String, String)]) async throws -> ModgudSession {
        let data = try checked(try await exchangeAtTokenEndpoint(fields))
        return try await adopt(data)
    }

    func beginCeremony(_ request: URLRequest) async throws -> (id: String, options: [String: Any]) {
        try beginCeremony(answer: try await exchange(request))
    }

    func beginCeremony(answer: (Data, HTTPURLResponse)) throws -> (id: String, options: [String: Any]) {
        let data = try checked(answer)
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any], let id = object["ceremonyId"] as? String,
            let options = object["options"] as? [String: Any]
        else { throw ModgudError.invalidResponse(status: 200, body: String(decoding: data.prefix(500), as: UTF8.self)) }
        return (id, options)
    }
}

extension URLRequest {
    /// A POST without a body.
    func posting() -> URLRequest {
        var request = self
        request.httpMethod = "POST"
        return request
    }
}
