import Foundation

/// What makes and uses passkeys for the client: the platform (`PlatformPasskeyAuthenticator`
/// with `AuthenticationServices` on Apple platforms), Android's Credential Manager through a
/// bridge, or a software authenticator in tests. The library turns the server's options into
/// these requests and the answers into WebAuthn's JSON, so an app writes no WebAuthn glue.
public protocol PasskeyAuthenticator: Sendable {
    /// Creates a passkey (WebAuthn `create()`): resident key and user verification required.
    func register(_ request: PasskeyRegistrationRequest) async throws -> PasskeyRegistration
    /// Signs the challenge with a passkey for the RP-ID (WebAuthn `get()`), usernameless.
    func authenticate(_ request: PasskeyAssertionRequest) async throws -> PasskeyAssertion
}

/// PublicKeyCredentialCreationOptions, decoded.
public struct PasskeyRegistrationRequest: Sendable, Equatable {
    public var challenge: Data
    public var rpID: String
    public var rpName: String
    /// The WebAuthn user handle (opaque bytes, no personal data).
    public var userID: Data
    public var userName: String
    public var userDisplayName: String
    /// Credentials the account has under this RP-ID already: do not make another on them.
    public var excludedCredentialIDs: [Data]
    /// An automatic upgrade (WebAuthn conditional create, issue 46): the platform creates the
    /// passkey without a prompt when it can, and the server accepts it without user presence.
    public var conditional = false
}

/// PublicKeyCredentialRequestOptions, decoded.
public struct PasskeyAssertionRequest: Sendable, Equatable {
    public var challenge: Data
    public var rpID: String
    /// Empty: any discoverable credential for the RP-ID (usernameless).
    public var allowedCredentialIDs: [Data]
}

/// What `create()` returned.
public struct PasskeyRegistration: Sendable, Equatable {
    public var credentialID: Data
    public var clientDataJSON: Data
    public var attestationObject: Data
    public var transports: [String]
    /// `platform` or `cross-platform`, when known.
    public var attachment: String?

    public init(credentialID: Data, clientDataJSON: Data, attestationObject: Data, transports: [String] = [], attachment: String? = nil) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
        self.attachment = attachment
    }

    /// PublicKeyCredential.toJSON() (WebAuthn L3 section 5.1.8).
    var json: String {
        var response: [String: Any] = [
            "clientDataJSON": Base64URL.encode(clientDataJSON), "attestationObject": Base64URL.encode(attestationObject),
        ]
        if !transports.isEmpty { response["transports"] = transports }
        var credential: [String: Any] = [
            "id": Base64URL.encode(credentialID), "rawId": Base64URL.encode(credentialID), "type": "public-key", "response": response,
            "clientExtensionResults": [String: Any](),
        ]
        if let attachment { credential["authenticatorAttachment"] = attachment }
        return PasskeyJSON.render(credential)
    }
}

/// What `get()` returned.
public struct PasskeyAssertion: Sendable, Equatable {
    public var credentialID: Data
    public var clientDataJSON: Data
    public var authenticatorData: Data
    public var signature: Data
    public var userHandle: Data?
    public var attachment: String?

    public init(credentialID: Data, clientDataJSON: Data, authenticatorData: Data, signature: Data, userHandle: Data?, attachment: String? = nil) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
        self.attachment = attachment
    }

    var json: String {
        var response: [String: Any] = [
            "clientDataJSON": Base64URL.encode(clientDataJSON), "authenticatorData": Base64URL.encode(authenticatorData),
            "signature": Base64URL.encode(signature),
        ]
        if let userHandle { response["userHandle"] = Base64URL.encode(userHandle) }
        var credential: [String: Any] = [
            "id": Base64URL.encode(credentialID), "rawId": Base64URL.encode(credentialID), "type": "public-key", "response": response,
            "clientExtensionResults": [String: Any](),
        ]
        if let attachment { credential["authenticatorAttachment"] = attachment }
        return PasskeyJSON.render(credential)
    }
}

/// The server's options JSON into requests.
enum PasskeyJSON {
    static func render(_ object: Any) -> String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8), as: UTF8.self)
    }

    static func registration(_ options: [String: Any]) throws -> PasskeyRegistrationRequest {
        guard let rp = options["rp"] as? [String: Any], let rpID = rp["id"] as? String, let user = options["user"] as? [String: Any],
            let userID = (user["id"] as? String).flatMap(Base64URL.decode), let challenge = (options["challenge"] as? String).flatMap(Base64URL.decode)
        else { throw ModgudError.invalidResponse(status: 200, body: "creation options without rp, user or challenge") }
        let name = user["name"] as? String ?? ""
        return PasskeyRegistrationRequest(
            challenge: challenge, rpID: rpID, rpName: rp["name"] as? String ?? rpID, userID: userID, userName: name,
            userDisplayName: user["displayName"] as? String ?? name,
            excludedCredentialIDs: (options["excludeCredentials"] as? [[String: Any]] ?? []).compactMap { ($0["id"] as? String).flatMap(Base64URL.decode) })
    }

    static func assertion(_ options: [String: Any]) throws -> PasskeyAssertionRequest {
        guard let rpID = options["rpId"] as? String, let challenge = (options["challenge"] as? String).flatMap(Base64URL.decode) else {
            throw ModgudError.invalidResponse(status: 200, body: "request options without rpId or challenge")
        }
        return PasskeyAssertionRequest(
            challenge: challenge, rpID: rpID,
            allowedCredentialIDs: (options["allowCredentials"] as? [[String: Any]] ?? []).compactMap { ($0["id"] as? String).flatMap(Base64URL.decode) })
    }
}
