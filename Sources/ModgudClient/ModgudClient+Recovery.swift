import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One of the person's live sessions (`GET /connect/sessions`).
public struct SessionInfo: Sendable, Equatable, Decodable {
    public var id: String
    public var clientId: String
    /// ISO 8601.
    public var startedAt: String
    public var scope: String
    /// The session this client is signed in with.
    public var current: Bool
}

/// Recovery codes and the person's sessions (issue 46; docs/guides/passkeys-in-an-app.md,
/// "Recovery").
extension ModgudClient {
    /// The scope of a recovery session: it can only enroll a passkey and list or end sessions.
    public static let recoveryScope = "urn:modgud:recovery"

    /// Signs in with a recovery code (`urn:modgud:recovery-code`): a recovery session, valid
    /// minutes and without a refresh token, in which to `enrollPasskey` and then
    /// `signInWithPasskey`. Every refusal is `.invalidGrant` "Invalid recovery code.".
    @discardableResult
    public func signIn(email: String, recoveryCode: String) async throws -> ModgudSession {
        try await token(grant("urn:modgud:recovery-code") + [("username", email), ("recovery_code", recoveryCode)])
    }

    /// A new set of ten recovery codes for the signed-in person, to show once (any earlier set
    /// stops working). Needs a recent sign-in, as enrolling a passkey does.
    public func generateRecoveryCodes() async throws -> [String] {
        struct Generated: Decodable { var codes: [String] }
        let answer = try checked(try await send(Self.json(endpoint("/connect/recovery-codes"), nil).posting()))
        return try JSONDecoder().decode(Generated.self, from: answer).codes
    }

    /// How many of the person's recovery codes are left (0 without a set).
    public func recoveryCodesRemaining() async throws -> Int {
        struct Status: Decodable { var remaining: Int }
        return try JSONDecoder().decode(Status.self, from: try checked(try await send(URLRequest(url: endpoint("/connect/recovery-codes"))))).remaining
    }

    /// The person's recovery codes stop working.
    public func revokeRecoveryCodes() async throws {
        var request = URLRequest(url: endpoint("/connect/recovery-codes"))
        request.httpMethod = "DELETE"
        _ = try checked(try await send(request))
    }

    /// The person's live sessions, newest first (a recovery session may ask).
    public func sessions() async throws -> [SessionInfo] {
        try JSONDecoder().decode([SessionInfo].self, from: try checked(try await send(URLRequest(url: endpoint("/connect/sessions")))))
    }

    /// Ends one of the person's sessions (a lost phone's): its tokens stop working at once.
    public func endSession(id: String) async throws {
        var request = URLRequest(url: endpoint("/connect/sessions/\(Self.pathSegment(id))"))
        request.httpMethod = "DELETE"
        _ = try checked(try await send(request))
    }
}

extension ModgudSession {
    /// Whether this is a recovery session (`ModgudClient.signIn(email:recoveryCode:)`).
    public var isRecovery: Bool { scope == ModgudClient.recoveryScope }
}
