import ArgumentParser
import Foundation
import ModgudClient
import ModgudDomain
import ModgudService
import WebAuthn

/// `modgud bench sessions`: users signed in directly through the token service (no mail),
/// one refresh token per line on standard output, to start load and failure tests from.
/// With `--dpop` each session is bound to a new P-256 key, printed after its token
/// (`TOKEN KEY`, the key's private scalar in base64url) for `bench chains` to sign with.
struct SessionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sessions",
        abstract: "Create N users in REALM and sign each in once with CLIENT; print their refresh tokens.")

    @OptionGroup var database: DatabaseOptions
    @Argument var realm: String
    @Argument var client: String
    @Option(help: "How many users.") var count = 16
    @Option(help: "Scope to grant (must include offline_access).") var scope = "offline_access"
    @Flag(help: "Bind each session to a new DPoP key (RFC 9449), printed after its token.") var dpop = false
    @Option(help: "The address of the first user (the others get generated ones).") var email: String?
    @Flag(help: "Enroll a software passkey for each user through the enrollment service (the client needs the passkey grant).")
    var passkey = false

    func run() async throws {
        try await AdminContext.run(database) { context in
            let services = context.services
            let client = try await services.clients.authenticate(realm: realm, clientID: self.client, secret: nil)
            for index in 0..<count {
                let email = index == 0 && self.email != nil ? self.email! : "load-\(index)-\(UUID().uuidString.prefix(8).lowercased())@example.com"
                let created = try await context.admin.users.create(realm: realm, email: email, metadata: context.metadata)
                let user = try await context.admin.users.state(realm: realm, id: created.id)
                let key = dpop ? SoftwareDPoPKey() : nil
                let tokens = try await services.tokens.signIn(
                    client: client, user: user, grantType: .otp, scope: scope, resources: [], amr: ["otp"], issuer: "https://\(realm)",
                    dpopKey: key?.thumbprint, metadata: context.metadata)
                if passkey, let settings = try await services.realms.settings(realm: realm) {
                    try await SoftwarePasskeyEnrollment.enroll(
                        passkeys: services.passkeys, realm: RealmDirectory.Entry(realmID: realm, settings: settings), userID: created.id, clientID: self.client,
                        name: "Pixel of \(email)")
                }
                guard let refresh = tokens.refreshToken else { throw CommandError("no refresh token: grant \(scope) to a client with refresh_token") }
                print(refresh + (key.map { " " + Base64URL.encode($0.rawRepresentation) } ?? ""))
            }
        }
    }
}
