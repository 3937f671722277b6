import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudClient
import ModgudDomain
@testable import ModgudService
import PQ
import WebAuthn
import WebAuthnTesting
import XCTest

/// Issue 15, item 2: the `ModgudClient` library against the real server over a real socket
/// (URLSession to a live Hummingbird server on a PostgreSQL of its own, mail over SMTP).
final class ModgudClientTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!
    var directory: URL!

    override func setUp() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("modgud-client-\(UUID().uuidString)")
    }

    override func tearDown() async throws {
        await harness?.close()
        try? FileManager.default.removeItem(at: directory)
    }

    static func client(
        _ port: Int, harness: EmailSignInHarness, directory: URL, clientID: String = "app", scope: String = "openid email offline_access",
        store: (any TokenStore)? = nil
    ) -> ModgudClient {
        let clock = harness.clock
        return ModgudClient(
            configuration: .init(issuer: URL(string: "http://localhost:\(port)")!, clientID: clientID, scope: scope),
            store: store ?? FileTokenStore(url: directory.appendingPathComponent("session.json")), now: { clock.now() })
    }

    func testCodeSignInAndTwentyConcurrentCallsOnAnExpiredTokenRefreshOnce() async throws {
        harness = try await EmailSignInHarness(issuerScheme: "http")
        let harness = self.harness!
        let directory = self.directory!
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let app = Self.client(port, harness: harness, directory: directory)
            do {
                _ = try await app.accessToken()
                XCTFail("no session yet")
            } catch let error as ModgudError { XCTAssertEqual(error, .notSignedIn) }

            try await app.requestCode(email: "ada@example.com")
            do {
                try await app.signIn(email: "ada@example.com", code: "000000")
                XCTFail("a wrong code signs nobody in")
            } catch let error as ModgudError { XCTAssertEqual(error, .invalidCode) }
            let session = try await app.signIn(email: "ada@example.com", code: try await harness.code(for: "ada@example.com"))
            XCTAssertNotNil(session.refreshToken)
            XCTAssertNotNil(session.subject)
            let file = directory.appendingPathComponent("session.json").path
            let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? NSNumber)
            XCTAssertEqual(mode.intValue & 0o777, 0o600, "the token file is its owner's only")
            let checked1 = try await app.userInfo()["email"]?.string
            XCTAssertEqual(checked1, "ada@example.com")

            // Twenty API calls find the access token expired at once (server and client clock):
            // one refresh goes out, every call succeeds, the session lives on.
            harness.clock.advance(16 * 60)
            let before = try await Self.refreshCount(harness)
            let emails = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<20 { group.addTask { try await app.userInfo()["email"]?.string } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertEqual(emails, Array(repeating: "ada@example.com", count: 20))
            let refreshes = try await Self.refreshCount(harness) - before
            XCTAssertEqual(refreshes, 1, "single-flight: one refresh for twenty callers")
            let revoked = try await harness.core.pool.query("SELECT count(*) FROM events WHERE type = 'token_family.revoked'").first!.decode(Int.self, at: 0)
            XCTAssertEqual(revoked, 0, "no spent token was presented, so no reuse revocation")
            let current = try await app.currentSession()
            let refreshed = try XCTUnwrap(current)
            XCTAssertNotEqual(refreshed.refreshToken, session.refreshToken, "rotated")

            // Another process resumes the stored session (what `modgud token` does).
            let resumed = Self.client(port, harness: harness, directory: directory)
            let token = try await resumed.accessToken()
            XCTAssertEqual(token, refreshed.accessToken)

            // Sign-out revokes the family at the server and forgets the session.
            try await app.signOut()
            XCTAssertFalse(FileManager.default.fileExists(atPath: file))
            let spent = try await H.token(
                server, [("grant_type", "refresh_token"), ("client_id", "app"), ("refresh_token", try XCTUnwrap(refreshed.refreshToken))])
            XCTAssertEqual(spent.json["error"] as? String, "invalid_grant")
            do {
                _ = try await app.accessToken()
                XCTFail("signed out")
            } catch let error as ModgudError { XCTAssertEqual(error, .notSignedIn) }

            // A session the server ended (logout everywhere) ends at the next refresh, typed.
            harness.clock.advance(121)
            try await app.requestCode(email: "ada@example.com")
            try await app.signIn(email: "ada@example.com", code: try await harness.code(for: "ada@example.com", number: 2))
            let admin = try await H.call(
                server, .post, "/admin/api/realms/dev/users/\(try XCTUnwrap(session.subject))/logout-everywhere", "",
                headers: [.authorization: "Bearer \(H.adminToken)"])
            XCTAssertTrue([.ok, .noContent].contains(admin.status), admin.body)
            do {
                _ = try await app.refresh()
                XCTFail("the family is dead")
            } catch let error as ModgudError { XCTAssertEqual(error, .sessionEnded) }
            let gone = try await app.currentSession()
            XCTAssertNil(gone, "an ended session is forgotten")
        }
    }

    func testMagicLinkAndTypedRequestErrors() async throws {
        harness = try await EmailSignInHarness(settings: { $0.registrationFields = RegistrationFields(firstname: .required) }, issuerScheme: "http")
        let harness = self.harness!
        let directory = self.directory!
        _ = try await harness.registerUser("bob@example.com")
        try await harness.app.test(.live) { server in
            let app = Self.client(try XCTUnwrap(server.port), harness: harness, directory: directory, store: MemoryTokenStore())
            do {
                try await app.requestCode(email: "new@example.com")
                XCTFail("the realm requires a first name")
            } catch let error as ModgudError { XCTAssertEqual(error, .fieldRequired("Firstname is required.")) }
            do {
                try await app.requestCode(email: "not an address", firstName: "X")
                XCTFail("not an address")
            } catch let error as ModgudError { XCTAssertEqual(error, .invalidEmail) }

            try await app.requestMagicLink(email: "bob@example.com")
            let link = try await harness.magicLink(for: "bob@example.com")
            let session = try await app.signIn(magicLink: try XCTUnwrap(URL(string: link.link)))
            XCTAssertEqual(session.subject, link.userID)
            do {
                try await app.signIn(magicLink: try XCTUnwrap(URL(string: link.link)))
                XCTFail("a link works once")
            } catch let error as ModgudError { XCTAssertEqual(error, .invalidLink) }
        }
    }

    func testPasskeySignUpConfirmationEnrollmentManagementAndSignIn() async throws {
        harness = try await PasskeySignUpTests.makeHarness(issuerScheme: "http")
        let harness = self.harness!
        let directory = self.directory!
        _ = try await harness.registerUser("bob@example.com")
        try await harness.app.test(.live) { server in
            let port = try XCTUnwrap(server.port)
            let app = Self.client(port, harness: harness, directory: directory, clientID: "ios", scope: "openid email profile offline_access")
            let device = SoftwarePasskeys(origin: "https://ios.acme.test")

            let signedUp = try await app.signUpWithPasskey(email: "grace@example.com", firstName: "Grace", displayName: "Grace H.", using: device)
            XCTAssertEqual(signedUp.idTokenClaims?["amr"], .array([.string("hwk"), .string("mfa")]))
            let checked2 = try await app.userInfo()["email_verified"]
            XCTAssertEqual(checked2, .bool(false))
            let checked3 = try await app.requestEmailConfirmation()
            XCTAssertTrue(checked3)
            do {
                try await app.confirmEmail(code: "000000")
                XCTFail("wrong code")
            } catch let error as ModgudError { XCTAssertEqual(error, .invalidCode) }
            try await app.confirmEmail(code: try await harness.code(for: "grace@example.com"))
            let checked4 = try await app.userInfo()["email_verified"]
            XCTAssertEqual(checked4, .bool(true))
            let confirmedAgain = try await app.requestEmailConfirmation()
            XCTAssertFalse(confirmedAgain, "confirmed already: nothing sent")

            // A second passkey, then list, get, rename, delete.
            let laptop = SoftwarePasskeys(origin: "https://ios.acme.test")
            let enrolled = try await app.enrollPasskey(name: "Laptop", using: laptop)
            XCTAssertEqual(enrolled.displayName, "Laptop")
            XCTAssertEqual(enrolled.provider.name, "Passkey")
            let checked5 = try await app.passkeys().count
            XCTAssertEqual(checked5, 2)
            let renamed = try await app.renamePasskey(id: enrolled.id, to: "Work laptop")
            XCTAssertEqual(renamed.displayName, "Work laptop")
            let checked6 = try await app.passkey(id: enrolled.id).displayName
            XCTAssertEqual(checked6, "Work laptop")
            do {
                try await app.renamePasskey(id: enrolled.id, to: "  ")
                XCTFail("an empty name")
            } catch let error as ModgudError { XCTAssertEqual(error, .invalidPasskeyName) }
            try await app.deletePasskey(id: enrolled.id)
            do {
                _ = try await app.passkey(id: enrolled.id)
                XCTFail("deleted")
            } catch let error as ModgudError { XCTAssertEqual(error, .passkeyNotFound) }

            // Issue 65: by default a sign-in 11 minutes old still enrolls (the guide's flow).
            harness.clock.advance(11 * 60)
            let tablet = SoftwarePasskeys(origin: "https://ios.acme.test")
            let late = try await app.enrollPasskey(name: "Tablet", using: tablet)
            try await app.deletePasskey(id: late.id)
            // With the realm's passkey step-up on, enrollment needs a fresh sign-in: RFC 9470's
            // challenge, `.reauthenticationRequired` without a handler.
            _ = try await harness.core.administration.realms.update("dev", metadata: .init()) { $0.accountGuards.passkeyStepUp = true }
            do {
                try await app.enrollPasskey(using: laptop)
                XCTFail("a stale sign-in")
            } catch let error as ModgudError { XCTAssertEqual(error, .reauthenticationRequired) }
            // With a handler, the client recovers by signing in again (here by passkey), never by
            // refreshing: no rotation happens, the call goes once more and enrolls.
            let rotations = try await harness.eventCount(type: "token_family.refreshed")
            let before = try await app.accessToken()
            await app.setStepUpHandler { challenge in
                XCTAssertEqual(challenge.maxAge, 600)
                _ = try await app.signInWithPasskey(using: device)
            }
            let stepped = try await app.enrollPasskey(name: "After step-up", using: tablet)
            await app.setStepUpHandler(nil)
            XCTAssertEqual(stepped.displayName, "After step-up")
            let rotationsAfter = try await harness.eventCount(type: "token_family.refreshed")
            XCTAssertEqual(rotationsAfter, rotations, "a step-up is never answered by a refresh")
            let after = try await app.accessToken()
            XCTAssertNotEqual(after, before, "a new sign-in")
            try await app.deletePasskey(id: stepped.id)

            // Sign out, then sign in with the first passkey: the same account.
            try await app.signOut()
            let signedIn = try await app.signInWithPasskey(using: device)
            XCTAssertEqual(signedIn.subject, signedUp.subject)
            do {
                try await app.signInWithPasskey(using: laptop)
                XCTFail("the deleted passkey")
            } catch let error as ModgudError {
                guard case .unknownPasskey(_, let rpID) = error else { return XCTFail("\(error)") }
                XCTAssertEqual(rpID, "ios.acme.test", "issue 46: the device is told which passkey to forget")
            }
            do {
                try await app.signUpWithPasskey(email: "bob@example.com", using: SoftwarePasskeys(origin: "https://ios.acme.test"))
                XCTFail("bob has an account")
            } catch let error as ModgudError { XCTAssertEqual(error, .accountExists) }
        }
    }

    static func refreshCount(_ harness: EmailSignInHarness) async throws -> Int {
        try await harness.core.pool.query("SELECT count(*) FROM events WHERE type = 'token_family.refreshed'").first!.decode(Int.self, at: 0)
    }
}

/// The software authenticator behind the library's `PasskeyAuthenticator` protocol: what an
/// app's platform authenticator does, with keys in memory.
actor SoftwarePasskeys: PasskeyAuthenticator {
    let origin: String
    let authenticator = SoftwareAuthenticator()
    private var credentials: [SoftwareCredential] = []

    init(origin: String) {
        self.origin = origin
    }

    func register(_ request: PasskeyRegistrationRequest) throws -> PasskeyRegistration {
        let credential = SoftwareCredential(algorithm: .es256, rpID: request.rpID, userHandle: Array(request.userID))
        var options = SoftwareAuthenticator.RegistrationOptions(challenge: Array(request.challenge), origin: origin)
        // Conditional create (issue 46): the platform makes the passkey without a gesture.
        if request.conditional { options.flags = [] }
        let made = authenticator.register(credential, options)
        credentials.append(credential)
        return PasskeyRegistration(
            credentialID: Data(credential.id), clientDataJSON: try Self.bytes(made.response.clientDataJSON),
            attestationObject: try Self.bytes(made.response.attestationObject), transports: made.response.transports ?? [], attachment: "platform")
    }

    func authenticate(_ request: PasskeyAssertionRequest) throws -> PasskeyAssertion {
        guard let index = credentials.lastIndex(where: { $0.rpID == request.rpID }) else { throw ModgudError.authenticator("no passkey for \(request.rpID)") }
        let made = authenticator.assert(&credentials[index], .init(challenge: Array(request.challenge), origin: origin))
        return PasskeyAssertion(
            credentialID: Data(credentials[index].id), clientDataJSON: try Self.bytes(made.response.clientDataJSON),
            authenticatorData: try Self.bytes(made.response.authenticatorData), signature: try Self.bytes(made.response.signature),
            userHandle: try made.response.userHandle.map(Self.bytes), attachment: "platform")
    }

    static func bytes(_ text: String) throws -> Data {
        guard let bytes = Base64URL.decode(text) else { throw ModgudError.authenticator("not base64url") }
        return Data(bytes)
    }
}
