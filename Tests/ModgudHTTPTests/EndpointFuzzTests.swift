import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudHTTP
import XCTest

/// Issue 10: a property test over every public endpoint. Random and mutated requests
/// (bodies of every content type, NUL and invalid UTF-8, broken encodings, garbage
/// credentials, path parameters, huge and deep values) never get a 5xx.
/// `MODGUD_FUZZ_ITERATIONS` and `MODGUD_FUZZ_SEED` make longer or other runs.
final class EndpointFuzzTests: XCTestCase {
    typealias H = EmailSignInHarness

    /// SplitMix64: a seeded generator, so a failure can be replayed.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static let routes: [(HTTPRequest.Method, String)] = [
        (.post, "/connect/token"), (.post, "/connect/introspect"), (.post, "/connect/revoke"), (.get, "/connect/userinfo"),
        (.post, "/connect/userinfo"), (.get, "/.well-known/openid-configuration"), (.get, "/.well-known/jwks.json"),
        (.post, "/api/account/native/otp/request"), (.post, "/api/account/native/register"), (.post, "/api/account/magic-link/request"),
        (.get, "/api/app-info"), (.post, "/api/account/totp/enroll"), (.post, "/api/account/totp/confirm"), (.post, "/connect/passkey/begin"),
        (.post, "/connect/passkey/enroll/begin"), (.post, "/connect/passkey/enroll"), (.get, "/connect/passkey"),
        (.delete, "/connect/passkey/{x}"), (.get, "/connect/passkey/{x}"), (.patch, "/connect/passkey/{x}"), (.get, "/health/live"), (.get, "/health/ready"),
        (.post, "/admin/api/realms"), (.get, "/admin/api/realms"), (.get, "/admin/api/realms/{x}"),
        (.delete, "/admin/api/realms/dev/clients/{x}"), (.post, "/admin/api/realms/dev/clients/{x}/secret"), (.post, "/admin/api/realms/dev/users"), (.patch, "/admin/api/realms/{x}"),
        (.post, "/admin/api/realms/dev/clients"), (.get, "/admin/api/realms/dev/clients/{x}"), (.patch, "/admin/api/realms/dev/clients/{x}"),
        (.get, "/admin/api/realms/dev/users"), (.post, "/admin/api/realms/dev/users/{x}/totp"), (.delete, "/admin/api/realms/dev/users/{x}/totp"), (.delete, "/admin/api/realms/dev/users/{x}"),
        (.get, "/admin/api/realms/dev/users/{x}/passkeys"), (.delete, "/admin/api/realms/dev/users/{x}/passkeys/{x}"),
        (.post, "/admin/api/realms/dev/users/{x}/{x}"), (.get, "/admin/api/realms/dev/users/{x}/audit"),
        (.post, "/connect/passkey/register/begin"), (.post, "/passkey/register"), (.post, "/passkey/challenge"),
        (.post, "/api/account/email/confirm/request"), (.post, "/api/account/email/confirm"),
        (.get, "/.well-known/apple-app-site-association"), (.get, "/.well-known/assetlinks.json"),
    ]

    static let names = [
        "grant_type", "client_id", "client_secret", "username", "otp_code", "user_id", "magic_token", "ceremony_id", "assertion",
        "refresh_token", "scope", "resource", "token", "totp_code", "Email", "FirstName", "LastName", "Code", "ceremonyId", "attestation",
        "DisplayName", "Hosts", "NativeGrants", "Grants", "RpId", "Type", "AllowedScopes", "ClientId", "user_profile", "auth_session",
        "authn_response", "realm", "audience",
    ]

    static let values = [
        "urn:cocoar:otp", "urn:cocoar:magic", "urn:cocoar:passkey", "urn:okta:params:oauth:grant-type:webauthn", "refresh_token", "client_credentials", "app", "conf", "plain",
        "ada@example.com", "123456", "openid offline_access", "https://elsewhere", "\u{0}", "%00", "%ff%fe", "%", "%zz", "\u{7f}",
        String(repeating: "a", count: 5000), "😀", "-1", "1e309", "null", "[]", "{}", "true", UUID().uuidString, "00000000-0000-0000-0000-000000000000",
        #"{"id":"x","rawId":"x","type":"public-key","response":{"clientDataJSON":"e30","authenticatorData":"AA","signature":"AA"}}"#,
    ]

    func testNoRequestToAnyEndpointGetsAServerError() async throws {
        let harness = try await EmailSignInHarness(settings: { $0.primaryDomain = "acme.test" })
        let environment = ProcessInfo.processInfo.environment
        let iterations = environment["MODGUD_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 3000
        let seed = environment["MODGUD_FUZZ_SEED"].flatMap(UInt64.init) ?? 0x5EED_1510
        let statuses = try await harness.app.test(.router) { client in
            var random = Generator(state: seed)
            var statuses: [Int: Int] = [:]
            for iteration in 0..<iterations {
                let (method, template) = Self.routes.randomElement(using: &random)!
                let path = template.replacingOccurrences(of: "{x}", with: Self.pathValue(&random))
                var headers = HTTPFields()
                let (contentType, body) = Self.body(&random)
                if let contentType { headers[.contentType] = contentType }
                switch Int.random(in: 0..<6, using: &random) {
                case 0: headers[.authorization] = "Bearer " + Self.values.randomElement(using: &random)!
                case 1: headers[.authorization] = "Basic " + Data(Self.values.randomElement(using: &random)!.utf8).base64EncodedString()
                case 2: headers[.authorization] = "Bearer " + H.adminToken
                case 3: headers[.authorization] = "Basic ###"
                default: break
                }
                let response = try await client.execute(uri: path, method: method, headers: headers, body: ByteBuffer(bytes: body))
                statuses[response.status.code, default: 0] += 1
                XCTAssertLessThan(
                    response.status.code, 500,
                    "iteration \(iteration) (seed \(seed)): \(method) \(path) \(contentType ?? "-") \(String(decoding: body.prefix(200), as: UTF8.self))")
            }
            return statuses
        }
        print("endpoint fuzz: \(iterations) requests, statuses \(statuses.sorted { $0.key < $1.key })")
        XCTAssertGreaterThan(statuses.filter { (200..<300).contains($0.key) }.values.reduce(0, +), 0, "some requests were valid enough to succeed")
        await harness.close()
    }

    static func pathValue(_ random: inout Generator) -> String {
        ["dev", UUID().uuidString, "ada@example.com", "%00", "%ff", "..", "disable", "x%2Fy", String(repeating: "z", count: 300), "😀"]
            .randomElement(using: &random)!
    }

    /// A body and its content type: a form, a JSON object, or bytes, each possibly mutated.
    static func body(_ random: inout Generator) -> (String?, [UInt8]) {
        let count = Int.random(in: 0...5, using: &random)
        let fields = (0..<count).map { _ in (names.randomElement(using: &random)!, values.randomElement(using: &random)!) }
        var bytes: [UInt8]
        var type: String?
        switch Int.random(in: 0..<5, using: &random) {
        case 0, 1:
            type = "application/x-www-form-urlencoded"
            bytes = Array(fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&").utf8)
        case 2, 3:
            type = "application/json"
            var object: [String: Any] = [:]
            for (name, value) in fields {
                switch Int.random(in: 0..<4, using: &random) {
                case 0: object[name] = Int.random(in: -5...5, using: &random)
                case 1: object[name] = [value]
                case 2: object[name] = ["nested": ["deeper": value]]
                default: object[name] = value
                }
            }
            bytes = Array((try? JSONSerialization.data(withJSONObject: object)) ?? Data("{}".utf8))
        default:
            type = ["text/plain", "application/json", "application/x-www-form-urlencoded", nil].randomElement(using: &random)!
            bytes = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        }
        // Mutations: flip, insert or drop bytes; splice NUL or invalid UTF-8; nest deeply.
        for _ in 0..<Int.random(in: 0...3, using: &random) where !bytes.isEmpty {
            let index = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<5, using: &random) {
            case 0: bytes[index] ^= UInt8.random(in: 1...255, using: &random)
            case 1: bytes.insert(contentsOf: [0xC3, 0x28], at: index)
            case 2: bytes.insert(contentsOf: Array(#"\u0000"#.utf8), at: index)
            case 3: bytes.remove(at: index)
            default: bytes = Array(String(repeating: "[", count: 5000).utf8) + bytes
            }
        }
        return (type, bytes)
    }
}
