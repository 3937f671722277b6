import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One of the user's passkeys (`GET /connect/passkey`).
public struct PasskeyInfo: Sendable, Equatable, Decodable {
    public struct Provider: Sendable, Equatable, Decodable {
        /// "iCloud Keychain", "Google Password Manager", … or "Passkey" when unknown.
        public var name: String
        public var aaguid: String?
        /// `data:` URLs, where known.
        public var iconLight: String?
        public var iconDark: String?

        enum CodingKeys: String, CodingKey {
            case name = "Name", aaguid = "Aaguid", iconLight = "IconLight", iconDark = "IconDark"
        }
    }

    public var id: String
    public var displayName: String
    public var createdAt: Date
    public var lastUsedAt: Date?
    public var provider: Provider

    enum CodingKeys: String, CodingKey {
        case id = "Id", displayName = "DisplayName", createdAt = "CreatedAt", lastUsedAt = "LastUsedAt", provider = "Provider"
    }
}

/// One RP-ID's passkey signals (`GET /connect/passkey/signals`), in the WebAuthn Signal API's terms.
public struct PasskeySignals: Sendable, Equatable, Decodable {
    public var rpId: String
    /// The user handle, base64url.
    public var userId: String
    public var allAcceptedCredentialIds: [String]
    public var name: String
    public var displayName: String
}

/// Passkey management with the session's access token.
extension ModgudClient {
    /// Enrolls a passkey for the signed-in user. Needs a recent sign-in:
    /// `.reauthenticationRequired` says sign in again first.
    @discardableResult
    public func enrollPasskey(name: String? = nil, using authenticator: some PasskeyAuthenticator) async throws -> PasskeyInfo {
        try await enroll(name: name, conditional: false, using: authenticator)
    }

    /// An automatic passkey upgrade (WebAuthn conditional create, issue 46): right after a
    /// sign-in by email code or link whose session says `passkeyUpgrade`, the platform makes a
    /// passkey without asking (iOS 18, Android's Credential Manager) and it is enrolled.
    /// `.upgradeNotAllowed` when the sign-in is older than 5 minutes or was by a passkey.
    @discardableResult
    public func upgradeToPasskey(name: String? = nil, using authenticator: some PasskeyAuthenticator) async throws -> PasskeyInfo {
        try await enroll(name: name, conditional: true, using: authenticator)
    }

    private func enroll(name: String?, conditional: Bool, using authenticator: some PasskeyAuthenticator) async throws -> PasskeyInfo {
        let path = conditional ? "/connect/passkey/enroll/begin?mediation=conditional" : "/connect/passkey/enroll/begin"
        let begun = try beginCeremony(answer: try await send(Self.json(endpoint(path), nil).posting()))
        var request = try PasskeyJSON.registration(begun.options)
        request.conditional = conditional
        let registration = try await authenticator.register(request)
        guard let attestation = try? JSONSerialization.jsonObject(with: Data(registration.json.utf8)) else {
            throw ModgudError.authenticator("the credential is not JSON")
        }
        var body: [String: Any] = ["ceremonyId": begun.id, "attestation": attestation]
        if let name { body["DisplayName"] = name }
        return try Self.decodePasskey(try checked(try await send(Self.json(endpoint("/connect/passkey/enroll"), body))))
    }

    /// What the device should be told about this person's passkeys (issue 46): per RP-ID, the
    /// credential ids the server accepts and the names to show. On iOS 26 and with
    /// androidx.credentials 1.6, pass them to the platform's signal APIs
    /// (`signalAllAcceptedCredentials`, `signalCurrentUserDetails`).
    public func passkeySignals() async throws -> [PasskeySignals] {
        try JSONDecoder().decode([PasskeySignals].self, from: try checked(try await send(URLRequest(url: endpoint("/connect/passkey/signals")))))
    }

    /// The user's passkeys, oldest first.
    public func passkeys() async throws -> [PasskeyInfo] {
        try Self.passkeyDecoder.decode([PasskeyInfo].self, from: try checked(try await send(URLRequest(url: endpoint("/connect/passkey")))))
    }

    /// One passkey (`.passkeyNotFound` for an unknown or another user's id).
    public func passkey(id: String) async throws -> PasskeyInfo {
        try Self.decodePasskey(try checked(try await send(URLRequest(url: endpoint("/connect/passkey/\(Self.pathSegment(id))")))))
    }

    /// Renames a passkey (1–64 characters; `.invalidPasskeyName` otherwise).
    @discardableResult
    public func renamePasskey(id: String, to name: String) async throws -> PasskeyInfo {
        try Self.decodePasskey(
            try checked(try await send(Self.json(endpoint("/connect/passkey/\(Self.pathSegment(id))"), method: "PATCH", ["DisplayName": name]))))
    }

    public func deletePasskey(id: String) async throws {
        var request = URLRequest(url: endpoint("/connect/passkey/\(Self.pathSegment(id))"))
        request.httpMethod = "DELETE"
        _ = try checked(try await send(request))
    }

    static func pathSegment(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-"))) ?? id
    }

    static let passkeyDecoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = ISO8601DateFormatter().date(from: text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an ISO 8601 date: \(text)"))
            }
            return date
        }
        return decoder
    }()

    static func decodePasskey(_ data: Data) throws -> PasskeyInfo {
        do {
            return try passkeyDecoder.decode(PasskeyInfo.self, from: data)
        } catch {
            throw ModgudError.invalidResponse(status: 200, body: String(decoding: data.prefix(500), as: UTF8.self))
        }
    }
}
