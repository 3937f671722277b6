import ArgumentParser
import Foundation
import ModgudClient

/// `modgud login`, `modgud token`, `modgud logout` (issue 15): a terminal's own Modgud client,
/// for CLIs, CI jobs and anyone trying a server. Built on `ModgudClient`; the session lives in
/// a 0600 file under the user's config directory (`FileTokenStore.defaultURL`).
struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login", abstract: "Sign in to a Modgud realm by email code and keep the session for `modgud token`.")

    @Option(help: "The realm's issuer, https://login.example.com.") var issuer: String
    @Option(help: "A public client allowed urn:cocoar:otp and refresh_token.") var clientID: String
    @Option(help: "The address (asked for when missing).") var email: String?
    @Option(help: "Scopes to ask for.") var scope = "openid offline_access"
    @Option(help: "Session file (default: $XDG_CONFIG_HOME/modgud/session.json or ~/.config/modgud/session.json).") var sessionFile: String?

    func run() async throws {
        guard let issuerURL = URL(string: issuer), issuerURL.scheme == "https" || issuerURL.scheme == "http" else {
            throw ValidationError("--issuer is an http(s) URL")
        }
        let client = ModgudClient(
            configuration: .init(issuer: issuerURL, clientID: clientID, scope: scope), store: FileTokenStore(url: SessionFile.url(sessionFile)))
        guard let address = email ?? Terminal.ask("Email: "), !address.isEmpty else { throw CommandError("no address given") }
        try await SessionFile.reporting { try await client.requestCode(email: address) }
        print("If \(address) can sign in, a code is on its way.")
        for attempt in 1...3 {
            guard let code = Terminal.ask("Code: ") else { throw CommandError("no code given") }
            do {
                let session = try await SessionFile.reporting { try await Self.signIn(client, address, code) }
                print("Signed in as \(address)\(session.subject.map { " (\($0))" } ?? ""). `modgud token` prints an access token.")
                return
            } catch let error as CommandError where attempt < 3 && error.description.hasPrefix("invalid code") {
                print("That code is not valid; try again.")
            }
        }
    }

    private static func signIn(_ client: ModgudClient, _ address: String, _ code: String) async throws -> ModgudSession {
        do {
            return try await client.signIn(email: address, code: code)
        } catch ModgudError.twoFactorRequired {
            guard let totp = Terminal.ask("Authenticator code: ") else { throw CommandError("no authenticator code given") }
            return try await client.signIn(email: address, code: code, totpCode: totp)
        }
    }
}

/// `modgud token`: a live access token for scripts (`curl -H "Authorization: Bearer $(modgud token)"`).
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Print a live access token of the `modgud login` session, refreshing it when needed.")
    @Option(help: "Session file (as for login).") var sessionFile: String?

    func run() async throws {
        let client = try await SessionFile.client(sessionFile)
        print(try await SessionFile.reporting { try await client.accessToken() })
    }
}

/// `modgud logout`: revokes the session at the server and deletes the file.
struct LogoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "logout", abstract: "Revoke the `modgud login` session and forget it.")
    @Option(help: "Session file (as for login).") var sessionFile: String?

    func run() async throws {
        let client = try await SessionFile.client(sessionFile)
        try await SessionFile.reporting { try await client.signOut() }
        print("Signed out.")
    }
}

/// The session file the three commands share.
enum SessionFile {
    static func url(_ path: String?) -> URL {
        path.map { URL(fileURLWithPath: $0) } ?? FileTokenStore.defaultURL()
    }

    /// A client for the stored session's issuer and client.
    static func client(_ path: String?) async throws -> ModgudClient {
        let store = FileTokenStore(url: url(path))
        guard let session = try await store.load(), let issuer = URL(string: session.issuer) else {
            throw CommandError("not signed in: run modgud login")
        }
        return ModgudClient(configuration: .init(issuer: issuer, clientID: session.clientID, scope: session.scope ?? "openid"), store: store)
    }

    /// Runs a client call and turns its typed errors into one line each.
    static func reporting<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ModgudError {
            throw CommandError(describe(error))
        }
    }

    static func describe(_ error: ModgudError) -> String {
        switch error {
        case .invalidCode: "invalid code (wrong, expired, or tried too often)"
        case .notSignedIn: "not signed in: run modgud login"
        case .sessionEnded: "the session ended (expired, revoked or signed out elsewhere): run modgud login"
        case .invalidTwoFactorCode: "the authenticator code is invalid"
        case .twoFactorRequired: "the authenticator code is missing or invalid"
        case .accountCannotSignIn: "the account cannot sign in"
        case .rateLimited(let seconds): "rate limited: try again in \(seconds.map { "\($0) s" } ?? "a while")"
        case .temporarilyUnavailable: "the server is unavailable for now: try again"
        case .nativeGrantsDisabled: "this realm does not allow native sign-in"
        case .oauth(let code, let description, _): "\(code): \(description ?? "")"
        case .problem(let title, let detail, _): "\(title): \(detail ?? "")"
        case .transport(let message): "cannot reach the server: \(message)"
        case .discovery(let message): "not a Modgud issuer: \(message)"
        default: "\(error)"
        }
    }
}

/// Prompts on standard error (so standard output stays clean for scripts) and reads a line.
enum Terminal {
    static func ask(_ prompt: String) -> String? {
        FileHandle.standardError.write(Data(prompt.utf8))
        return readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces)
    }
}
