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
    @Flag(help: "Bind the session to a new DPoP key (RFC 9449), kept beside the session file (0600).") var dpop = false

    func run() async throws {
        guard let issuerURL = URL(string: issuer), issuerURL.scheme == "https" || issuerURL.scheme == "http" else {
            throw ValidationError("--issuer is an http(s) URL")
        }
        // A new session gets a new key (or none): an old key file goes with the old session.
        let keyURL = SessionFile.keyURL(sessionFile)
        try? FileManager.default.removeItem(at: keyURL)
        let key = dpop ? try SoftwareDPoPKey.loadOrCreate(at: keyURL) : nil
        let client = ModgudClient(
            configuration: .init(issuer: issuerURL, clientID: clientID, scope: scope), store: FileTokenStore(url: SessionFile.url(sessionFile)), dpop: key)
        guard let address = email ?? Terminal.ask("Email: "), !address.isEmpty else { throw CommandError("no address given") }
        try await SessionFile.reporting { try await client.requestCode(email: address) }
        print("If \(address) can sign in, a code is on its way.")
        for attempt in 1...3 {
            guard let code = Terminal.ask("Code: ") else { throw CommandError("no code given") }
            do {
                let session = try await SessionFile.reporting { try await Self.signIn(client, address, code) }
                let bound = session.isDPoPBound ? " The session is bound to the DPoP key in \(keyURL.path)." : ""
                print("Signed in as \(address)\(session.subject.map { " (\($0))" } ?? "").\(bound) `modgud token` prints an access token.")
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

/// `modgud token`: a live access token for scripts (`curl -H "Authorization: Bearer $(modgud token)"`),
/// or with `--header-for URL` the request headers themselves, a DPoP proof among them for a
/// bound session (`curl -H @<(modgud token --header-for URL) URL`).
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Print a live access token of the `modgud login` session, refreshing it when needed.")
    @Option(help: "Session file (as for login).") var sessionFile: String?
    @Option(help: "Print the headers (Authorization, and DPoP for a bound session) for a request to this URL instead.") var headerFor: String?
    @Option(help: "The method of that request.") var method = "GET"

    func run() async throws {
        let client = try await SessionFile.client(sessionFile)
        guard let headerFor else {
            if try await client.currentSession()?.isDPoPBound == true {
                FileHandle.standardError.write(Data("This session is DPoP-bound: the token needs a proof; use --header-for URL.\n".utf8))
            }
            print(try await SessionFile.reporting { try await client.accessToken() })
            return
        }
        guard let url = URL(string: headerFor), url.scheme != nil else { throw ValidationError("--header-for is a URL") }
        for header in try await SessionFile.reporting({ try await client.authorizationHeaders(method: method.uppercased(), url: url) }) {
            print("\(header.name): \(header.value)")
        }
    }
}

/// `modgud logout`: revokes the session at the server and deletes the file.
struct LogoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "logout", abstract: "Revoke the `modgud login` session and forget it.")
    @Option(help: "Session file (as for login).") var sessionFile: String?

    func run() async throws {
        let client = try await SessionFile.client(sessionFile)
        defer { try? FileManager.default.removeItem(at: SessionFile.keyURL(sessionFile)) }
        try await SessionFile.reporting { try await client.signOut() }
        print("Signed out.")
    }
}

/// The session file the three commands share.
enum SessionFile {
    static func url(_ path: String?) -> URL {
        path.map { URL(fileURLWithPath: $0) } ?? FileTokenStore.defaultURL()
    }

    /// The DPoP key of `modgud login --dpop`: `session.dpop-key` beside `session.json`.
    static func keyURL(_ path: String?) -> URL {
        url(path).deletingPathExtension().appendingPathExtension("dpop-key")
    }

    /// A client for the stored session's issuer and client (with its DPoP key when bound).
    static func client(_ path: String?) async throws -> ModgudClient {
        let store = FileTokenStore(url: url(path))
        guard let session = try await store.load(), let issuer = URL(string: session.issuer) else {
            throw CommandError("not signed in: run modgud login")
        }
        var key: SoftwareDPoPKey?
        if session.isDPoPBound {
            guard FileManager.default.fileExists(atPath: keyURL(path).path) else {
                throw CommandError("the session is DPoP-bound and its key \(keyURL(path).path) is gone: run modgud login")
            }
            key = try SoftwareDPoPKey.loadOrCreate(at: keyURL(path))
        }
        return ModgudClient(configuration: .init(issuer: issuer, clientID: session.clientID, scope: session.scope ?? "openid"), store: store, dpop: key)
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
