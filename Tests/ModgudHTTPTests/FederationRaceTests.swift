import Foundation
import HTTPTypes
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import PostgresTestSupport
import XCTest

/// Issue 69, item 4: concurrent first sign-ins of one new provider account, on two instances
/// of one database, all end with that account's tokens (or a retry-able answer, which the
/// retry turns into them), never a link session that would only answer `account_linked`; one
/// user and one link are created.
final class FederationRaceTests: XCTestCase {
    typealias H = EmailSignInHarness

    func testTenFirstSignInsOfOneNewAccountAcrossTwoInstancesAllEndInThatAccount() async throws {
        let idp = try StandInProvider()
        let database = try await TestDatabase.create(maxConnections: 40)
        let pools = [database.pool, database.makePool(maxConnections: 20)]
        let cores = try pools.map { try ModgudCore(pool: $0, masterKey: Array(repeating: 3, count: 32)) }
        var apple = FederatedProvider.apple(audiences: ["com.example.app"])
        apple.jwksURL = idp.appleJWKS
        var settings = RealmSettings(hosts: ["localhost"], displayName: "Dev", nativeGrants: NativeGrantSettings(enabled: true))
        settings.federatedProviders = [apple]
        _ = try await cores[0].administration.realms.create("dev", settings: settings, metadata: .init())
        try await cores[0].keys.rotate(realm: "dev", now: Date(), metadata: .init())
        _ = try await cores[1].administration.clients.create(
            realm: "dev", id: "app",
            settings: ClientSettings(type: .public, grants: [.tokenExchange, .refreshToken], allowedScopes: ["openid", "email", "offline_access"]),
            metadata: .init())
        let email = "race@privaterelay.appleid.com"
        try await buildApplication(core: cores[0]).test(.router) { onA in
            try await buildApplication(core: cores[1]).test(.router) { onB in
                // Instance 0 is A, 1 is B.
                let nonceOn: @Sendable (Int) async throws -> (nonce: String, hash: String) = {
                    $0 == 0 ? try await FederationExchangeTests.nonce(onA) : try await FederationExchangeTests.nonce(onB)
                }
                let exchangeOn: @Sendable (Int, String, String) async throws -> H.Reply = { instance, token, nonce in
                    instance == 0
                        ? try await FederationExchangeTests.exchange(onA, token, nonce: nonce) : try await FederationExchangeTests.exchange(onB, token, nonce: nonce)
                }
                // Ten sign-ins, each with its own nonce and token, alternating between the instances.
                var prepared: [(client: Int, nonce: String, token: String)] = []
                for index in 0..<10 {
                    let nonce = try await nonceOn(index % 2)
                    prepared.append((index % 2, nonce.nonce, try await idp.mint("apple", ["nonce": nonce.hash, "email": email])))
                }
                let answers = try await withThrowingTaskGroup(of: (Int, H.Reply).self) { group in
                    for (index, attempt) in prepared.enumerated() {
                        group.addTask {
                            (index, try await exchangeOn(attempt.client, attempt.token, attempt.nonce))
                        }
                    }
                    return try await group.reduce(into: [Int: H.Reply]()) { $0[$1.0] = $1.1 }
                }
                var subjects: Set<String> = []
                for (index, reply) in answers.sorted(by: { $0.key < $1.key }) {
                    var answer = reply
                    let description = answer.json["error_description"] as? String ?? ""
                    XCTAssertFalse(description.hasPrefix("link_requires_email_code") || description.hasPrefix("account_linked"), "sign-in \(index): \(answer.body)")
                    if answer.status != .ok {
                        // The retry-able answer: the app asks again (a new nonce) and is signed in.
                        XCTAssertTrue(description.hasPrefix("retry:"), "sign-in \(index): \(answer.body)")
                        let other = 1 - prepared[index].client
                        let nonce = try await nonceOn(other)
                        answer = try await exchangeOn(other, try await idp.mint("apple", ["nonce": nonce.hash, "email": email]), nonce.nonce)
                    }
                    XCTAssertEqual(answer.status, .ok, "sign-in \(index): \(answer.body)")
                    subjects.insert(try FederationExchangeTests.subject(answer))
                }
                XCTAssertEqual(subjects.count, 1, "every sign-in ends in the one account: \(subjects)")
                let users = try await database.pool.query("SELECT count(*) FROM users WHERE realm_id = 'dev'").first?.decode(Int.self, at: 0)
                let links = try await database.pool.query("SELECT count(*) FROM federated_identities").first?.decode(Int.self, at: 0)
                XCTAssertEqual(users, 1)
                XCTAssertEqual(links, 1)
            }
        }
        await pools[1].close()
        await database.drop()
    }
}
