import Crypto
import EventSourcing
import Foundation
import JWTKit
import ModgudDomain
@testable import ModgudService
import PQ
import PostgresTestSupport
import XCTest

final class TokenMintingTests: XCTestCase {
    var database: TestDatabase!
    var instance: IdentityInstance!
    var ring: SigningKeyRing!
    let masterKey = Array(repeating: UInt8(7), count: 32)

    override func setUp() async throws {
        database = try await TestDatabase.create(maxConnections: 10)
        instance = IdentityInstance(pool: database.pool)
        ring = SigningKeyRing(pool: database.pool, sealer: try KeySealer(masterKey: masterKey), realms: instance.realms)
        _ = try await instance.realm("demo").execute(.create(id: "demo", settings: demoSettings), now: now, metadata: .none)
    }

    override func tearDown() async throws {
        await database?.drop()
    }

    func user() throws -> User.State {
        let id = UUID()
        return try User.decide(
            .register(id: id, email: .plain("ada@example.com"), emailConfirmed: true, username: .plain("ada"), firstName: .plain("Ada"),
                lastName: .plain("Lovelace"), securityStamp: "s", via: "otp"), state: User.initialState, now: now
        ).reduce(User.initialState, User.evolve)
    }

    func request(_ user: User.State?, format: AccessTokenFormat = .reference, scopes: [String] = ["openid", "email", "profile", "offline_access"])
        -> TokenMinter.Request
    {
        TokenMinter.Request(
            realm: "demo", issuer: "https://login.demo.test", clientID: "app", format: format, user: user,
            profile: user.map { _ in UserProfile(email: "ada@example.com", emailConfirmed: true, username: "ada", firstName: "Ada", lastName: "Lovelace") },
            scopes: scopes,
            audiences: ["app", "https://api.demo.test"], authTime: Date(), amr: ["otp"], accessLifetime: 900, refreshLifetime: 14 * 86400)
    }

    func verifier() async throws -> JWTKeyCollection {
        try await JWTKeyCollection().add(jwksJSON: try await ring.jwks(realm: "demo"))
    }

    /// Issue 11 / docs/spec.md section 5: NumericDates are whole seconds, read off the raw payload.
    func testEveryNumericDateInMintedJWTsIsAnInteger() async throws {
        _ = try await ring.rotate(realm: "demo", now: now, metadata: .none)
        let second = Int(Date().timeIntervalSince1970)
        let fractional = Date(timeIntervalSince1970: Double(second) + 0.404432)
        var asked = request(try user(), format: .jwt)
        asked.authTime = Date(timeIntervalSince1970: Double(second - 86) + 0.75)
        let minted = try await TokenMinter(keys: ring).mint(asked, now: fractional)
        for token in [minted.idToken!, minted.accessToken] {
            let payload = String(token.split(separator: ".")[1])
            var base64 = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
            let json = String(decoding: try XCTUnwrap(Data(base64Encoded: base64)), as: UTF8.self)
            for claim in ["iat", "exp"] {
                XCTAssertNotNil(json.firstMatch(of: try Regex("\"\(claim)\":\\d+[,}]")), "\(claim) in \(json)")
            }
            XCTAssertTrue(json.contains("\"iat\":\(second)"), json)
            XCTAssertTrue(json.contains("\"exp\":\(second + 900)"), json)
        }
        let keys = try await verifier()
        let claims = try await keys.verify(minted.idToken!, as: IDTokenClaims.self)
        XCTAssertEqual(claims.authTime.timeIntervalSince1970, Double(second - 86), "auth_time is whole seconds too")
    }

    func testPublishedKeysVerifyIDTokensAndJWTAccessTokens() async throws {
        let kid = try await ring.rotate(realm: "demo", now: now, metadata: .none)
        let person = try user()
        let minted = try await TokenMinter(keys: ring).mint(request(person, format: .jwt), now: Date())
        let keys = try await verifier()

        let id = try await keys.verify(minted.idToken!, as: IDTokenClaims.self)
        XCTAssertEqual(id.iss.value, "https://login.demo.test")
        XCTAssertEqual(id.sub.value, person.id!.uuidString.lowercased())
        XCTAssertEqual(id.aud.value, ["app"])
        XCTAssertEqual(id.email, "ada@example.com")
        XCTAssertEqual(id.emailVerified, true)
        XCTAssertEqual(id.givenName, "Ada")
        XCTAssertEqual(id.amr, ["otp"])

        let access = try await keys.verify(minted.accessToken, as: AccessTokenClaims.self)
        XCTAssertEqual(access.scope, "openid email profile offline_access")
        XCTAssertEqual(access.clientID, "app")
        XCTAssertEqual(access.aud.value, ["app", "https://api.demo.test"])
        XCTAssertEqual(minted.accessRecord.hash, OpaqueToken.hash(minted.accessToken), "the log keeps the whole token's hash only (issue 44)")
        XCTAssertFalse(access.jti.value.isEmpty)
        XCTAssertNotNil(minted.refreshToken)
        XCTAssertEqual(minted.expiresIn, 900)
        XCTAssertTrue(minted.idToken!.contains("."), "a compact JWS")
        XCTAssertEqual(try JSONDecoder().decode(JWTHeaderKid.self, from: Base64Header.decode(minted.idToken!)).kid, kid)
    }

    func testTokensSignedBeforeARotationStillVerify() async throws {
        try await ring.rotate(realm: "demo", now: now, metadata: .none)
        let old = try await TokenMinter(keys: ring).mint(request(try user()), now: Date())
        let newKid = try await ring.rotate(realm: "demo", algorithm: .rs256, now: now, metadata: .none)
        let fresh = try await TokenMinter(keys: ring).mint(request(try user()), now: Date())
        let keys = try await verifier()
        _ = try await keys.verify(old.idToken!, as: IDTokenClaims.self)
        _ = try await keys.verify(fresh.idToken!, as: IDTokenClaims.self)
        XCTAssertEqual(try JSONDecoder().decode(JWTHeaderKid.self, from: Base64Header.decode(fresh.idToken!)).kid, newKid)
        let jwks = try JSONSerialization.jsonObject(with: Data(try await ring.jwks(realm: "demo").utf8)) as! [String: [[String: String]]]
        XCTAssertEqual(Set(jwks["keys"]!.map { $0["kty"]! }), ["RSA", "EC"], "both keys stay published")
        XCTAssertNil(jwks["keys"]!.first { $0["d"] != nil }, "no private member in the JWKS")
    }

    func testPrivateKeysNeverEnterTheLogAndOnlyTheMasterKeyOpensThem() async throws {
        let kid = try await ring.rotate(realm: "demo", now: now, metadata: .none)
        let payloads = try await database.pool.query("SELECT payload::text FROM events WHERE type = 'realm.signing_key_rotated'").rows
            .map { try $0.decode(String.self, at: 0) }
        XCTAssertEqual(payloads.count, 1)
        XCTAssertFalse(payloads[0].contains("\"d\""), "no private JWK member in the event")
        let sealed = try await database.pool.query("SELECT sealed FROM signing_key_secrets WHERE kid = \(kid)").first!.decode(PQBytes.self, at: 0).bytes
        XCTAssertThrowsError(try KeySealer(masterKey: Array(repeating: 8, count: 32)).open(sealed, realm: "demo", kid: kid))
        XCTAssertThrowsError(try KeySealer(masterKey: masterKey).open(sealed, realm: "other", kid: kid), "bound to its realm and kid")
        XCTAssertNoThrow(try KeySealer(masterKey: masterKey).open(sealed, realm: "demo", kid: kid))
        XCTAssertThrowsError(try KeySealer(masterKey: [1, 2, 3]))
    }

    func testReferenceTokensAreRandomAndOnlyTheirHashIsKept() async throws {
        try await ring.rotate(realm: "demo", now: now, metadata: .none)
        let minted = try await TokenMinter(keys: ring).mint(request(try user(), scopes: ["offline_access"]), now: Date())
        XCTAssertEqual(minted.accessToken.count, 43, "256 bits, base64url")
        XCTAssertNotEqual(minted.accessRecord.hash, minted.accessToken)
        XCTAssertEqual(minted.accessRecord.hash, OpaqueToken.hash(minted.accessToken))
        XCTAssertNil(minted.idToken, "no openid scope, no ID token")
        let other = OpaqueToken.generate()
        XCTAssertNotEqual(other.token, minted.accessToken)
    }

    func testSigningWithoutAKeyIsAClearError() async throws {
        do {
            _ = try await TokenMinter(keys: ring).mint(request(try user(), format: .jwt), now: Date())
            XCTFail("no key yet")
        } catch let error as SigningKeyRingError {
            XCTAssertEqual(error, .noKey(realm: "demo"))
        }
    }
}

private struct JWTHeaderKid: Decodable { var kid: String }

private enum Base64Header {
    static func decode(_ token: String) -> Data {
        var text = String(token.split(separator: ".")[0]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text)!
    }
}
