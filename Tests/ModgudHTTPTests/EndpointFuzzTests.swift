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

    /// A concrete path for a route template: the realm parameter mostly the harness's realm
    /// (so admin routes get past the realm lookup), every other parameter a random value.
    static func path(_ template: String, _ random: inout Generator) -> String {
        template.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            guard segment.hasPrefix("{") else { return String(segment) }
            if segment == "{realm}", Int.random(in: 0..<4, using: &random) > 0 { return "dev" }
            return pathValue(&random)
        }.joined(separator: "/")
    }

    func testTheRouteTableIsTheRouters() {
        // A sanity check of the shared list: the grant endpoint and a parameterised admin route.
        let routes = Set(RouteTable.all.map { "\($0.method) \($0.template)" })
        XCTAssertTrue(routes.contains("POST /connect/token"), "\(routes.sorted())")
        XCTAssertTrue(routes.contains("DELETE /admin/api/realms/{realm}/users/{user}/passkeys/{passkey}"), "\(routes.sorted())")
        XCTAssertGreaterThan(routes.count, 40)
    }

    func testNoRequestToAnyEndpointGetsAServerError() async throws {
        let harness = try await EmailSignInHarness(settings: { $0.primaryDomain = "acme.test" })
        let environment = ProcessInfo.processInfo.environment
        let iterations = environment["MODGUD_FUZZ_ITERATIONS"].flatMap(Int.init) ?? 3000
        let seed = environment["MODGUD_FUZZ_SEED"].flatMap(UInt64.init) ?? 0x5EED_1510
        let statuses = try await harness.app.test(.router) { client in
            var random = Generator(state: seed)
            var statuses: [Int: Int] = [:]
            for iteration in 0..<iterations {
                let (method, template) = RouteTable.all.randomElement(using: &random)!
                let path = Self.path(template, &random)
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
