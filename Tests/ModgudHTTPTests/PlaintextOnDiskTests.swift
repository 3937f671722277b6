import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

/// Issue 22: nothing personal reaches PostgreSQL's files in the clear: not the heap, not the
/// WAL (and so no WAL archive or base backup), not the server's log. Every way an address,
/// a name or a client IP enters the service is used on a cluster of its own; then the cluster
/// is checkpointed and stopped, and every file under its data directory is searched.
final class PlaintextOnDiskTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    static let owner = "ondisk.owner.qzv@example.com"
    static let strangers = (1...3).map { "ondisk.stranger\($0).qzv@example.com" }
    static let firstName = "Xanthippeqzv"
    static let clientIP = "198.51.100.77"

    override func tearDown() async throws {
        await harness?.close()
    }

    func testNoAddressNameOrClientIPInAnyFileOfTheCluster() async throws {
        let database = try await RestartableDatabase()
        harness = try await EmailSignInHarness(settings: { $0.registrationFields.firstname = .optional }, database: database)
        let harness = self.harness!
        _ = try await harness.core.administration.clients.create(
            realm: "dev", id: "ios",
            settings: ClientSettings(
                type: .public, grants: [.otp, .magic, .passkey, .refreshToken], allowedScopes: ["openid", "email", "offline_access"],
                rpID: "ios.acme.test"),
            metadata: .init())
        let steps = PasskeySteps(harness: harness)
        var configuration = harness.configuration
        configuration.trustedProxies = ["127.0.0.1", "::1"]
        let headers: HTTPFields = [.contentType: "application/json", .init("X-Forwarded-For")!: Self.clientIP]
        let form: HTTPFields = [.contentType: "application/x-www-form-urlencoded", .init("X-Forwarded-For")!: Self.clientIP]
        let admin: HTTPFields = [.authorization: "Bearer \(H.adminToken)"]
        try await buildApplication(core: harness.core, configuration: configuration).test(.live) { client in
            // Sign up by code (a name included), sign in by code, sign in by magic link.
            _ = try await H.requestCode(client, Self.owner, extra: ["FirstName": Self.firstName])
            let signUp = try await H.token(
                client, [("grant_type", "urn:cocoar:otp"), ("client_id", "app"), ("username", Self.owner),
                         ("otp_code", try await harness.code(for: Self.owner)), ("scope", "openid email offline_access")], headers: form)
            XCTAssertEqual(signUp.status, .ok, signUp.body)
            harness.clock.advance(121)
            _ = try await H.call(client, .post, "/api/account/native/otp/request", H.jsonBody(["Email": Self.owner]), headers: headers)
            let login = try await H.token(
                client, [("grant_type", "urn:cocoar:otp"), ("client_id", "app"), ("username", Self.owner),
                         ("otp_code", try await harness.code(for: Self.owner, number: 2))], headers: form)
            XCTAssertEqual(login.status, .ok, login.body)
            _ = try await H.call(client, .post, "/api/account/magic-link/request", H.jsonBody(["Email": Self.owner]), headers: headers)
            let link = try await harness.magicLink(for: Self.owner)
            let magic = try await H.token(
                client, [("grant_type", "urn:cocoar:magic"), ("client_id", "ios"), ("user_id", link.userID), ("magic_token", link.token),
                         ("scope", "openid offline_access")],
                headers: form)
            XCTAssertEqual(magic.status, .ok, magic.body)
            // A passkey named with the person's name, then renamed: a label users type.
            let bearer = try XCTUnwrap(magic.json["access_token"] as? String)
            let (_, passkeyID) = try await steps.enroll(client, token: bearer, origin: "https://ios.acme.test", name: "\(Self.firstName)'s phone")
            let renamed = try await H.call(
                client, .patch, "/connect/passkey/\(passkeyID)", #"{"DisplayName":"\#(Self.firstName)'s tablet"}"#,
                headers: PasskeySteps.bearer(bearer, json: true))
            XCTAssertEqual(renamed.json["DisplayName"] as? String, "\(Self.firstName)'s tablet", "opened for its owner")
            // Mail to addresses nobody holds (registration codes, never redeemed).
            for stranger in Self.strangers {
                _ = try await H.call(client, .post, "/api/account/native/otp/request", H.jsonBody(["Email": stranger]), headers: headers)
                _ = try await harness.mail(to: stranger)
            }
            // The owner is erased.
            let erased = try await H.call(client, .delete, "/admin/api/realms/dev/users/\(link.userID)?erase=true", "", headers: admin)
            XCTAssertEqual(erased.status, .ok, erased.body)
        }
        await harness.stopDispatcher()
        _ = try await database.pool.query("CHECKPOINT")
        await database.pool.close()
        try database.stop()

        let folder = database.cluster.dataDirectory
        // The search reaches the WAL: an event type every append above wrote is found there.
        XCTAssertFalse(try Self.filesContaining(["challenge.issued"], under: folder + "/pg_wal").isEmpty, "the WAL is searched")
        XCTAssertFalse(try Self.filesContaining(["challenge.issued"], under: folder + "/base").isEmpty, "the heap is searched")
        var needles: [String] = [Self.firstName, Self.clientIP]
        for address in [Self.owner] + Self.strangers {
            let bytes = Data(address.utf8)
            needles += [
                address, address.replacingOccurrences(of: "@", with: "\\u0040"), bytes.base64EncodedString(),
                Base64URLText.encode(Array(bytes)),
            ]
        }
        let found = try Self.filesContaining(needles, under: folder)
        XCTAssertEqual(found, [], "personal data in plain text on disk")
    }

    /// The files under `folder` holding any of `needles` (bytes, case-sensitive), by grep.
    static func filesContaining(_ needles: [String], under folder: String) throws -> [String] {
        let patterns = FileManager.default.temporaryDirectory.appendingPathComponent("needles-\(UUID().uuidString)")
        try needles.joined(separator: "\n").write(to: patterns, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: patterns) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["grep", "-r", "-l", "-a", "-F", "-f", patterns.path, folder]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertLessThanOrEqual(process.terminationStatus, 1, "grep failed")
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init).sorted()
    }
}
