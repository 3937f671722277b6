import Foundation
import Hummingbird
import HummingbirdTesting
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import Prometheus
import XCTest

/// Issue 11: the token endpoint's limits let a busy public app through while one source
/// cannot spend the app's budget; log-only mode and source allowlists per policy.
final class RateLimitModelTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    /// A live server behind a "proxy" (loopback is trusted, so X-Forwarded-For names the source).
    private func live(_ body: @escaping @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        var configuration = harness.configuration
        configuration.trustedProxies = ["127.0.0.1", "::1"]
        configuration.metrics = MetricsExposition.registry
        try await buildApplication(core: harness.core, configuration: configuration).test(.live) { client in try await body(client) }
    }

    /// A refresh attempt from `source` (an unknown token: 400 when admitted, 429 when limited).
    private static func attempt(_ client: any TestClientProtocol, from source: String, clientID: String = "app") async throws -> Int {
        let response = try await client.execute(
            uri: "/connect/token", method: .post,
            headers: [.contentType: "application/x-www-form-urlencoded", .init("X-Forwarded-For")!: source],
            body: ByteBuffer(string: "grant_type=refresh_token&client_id=\(clientID)&refresh_token=unknown"))
        return Int(response.status.code)
    }

    func testABusyPublicAppFromManySourcesIsNeverThrottledButOneNoisySourceIs() async throws {
        harness = try await EmailSignInHarness()
        try await live { client in
            // 400 installations, two refreshes each, one client_id: the old 60/min per client
            // would have answered 429 from the 61st on.
            let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        var seen: [Int] = []
                        for device in stride(from: worker, to: 400, by: 8) {
                            let source = "198.51.\(device / 250).\(device % 250 + 1)"
                            for _ in 0..<2 { seen.append(try await Self.attempt(client, from: source)) }
                        }
                        return seen
                    }
                }
                return try await group.reduce(into: [Int]()) { $0 += $1 }
            }
            XCTAssertEqual(statuses.count, 800)
            XCTAssertEqual(statuses.filter { $0 == 429 }.count, 0, "a busy app is never throttled")

            var noisy: [Int] = []
            for _ in 0..<70 { noisy.append(try await Self.attempt(client, from: "203.0.113.9")) }
            XCTAssertEqual(noisy.prefix(60).filter { $0 == 429 }.count, 0)
            XCTAssertEqual(noisy.suffix(10).filter { $0 == 429 }.count, 10, "one source is stopped after its burst")
            let other = try await Self.attempt(client, from: "203.0.113.10")
            XCTAssertEqual(other, 400, "and the app's other installations are not")
        }
    }

    func testLogOnlyCountsWouldBeRejectionsAndAnAllowlistedRangeIsNeverLimited() async throws {
        harness = try await EmailSignInHarness(settings: {
            $0.rateLimitOverrides["token.client-source"] = RateLimitSetting(limit: 1, windowSeconds: 3600, burst: 1, logOnly: true)
            $0.rateLimitOverrides["token.ip"] = RateLimitSetting(limit: 1, windowSeconds: 3600, burst: 1, allowlist: ["10.0.0.0/8", "2001:db8::/32"])
        })
        let before = Self.value(of: #"modgud_rate_limit_would_reject_total{policy="token.client-source"}"#)
        try await live { client in
            var allowed: [Int] = []
            for source in ["10.1.2.3", "10.200.0.1", "2001:db8:1:2::5"] {
                for _ in 0..<3 { allowed.append(try await Self.attempt(client, from: source)) }
            }
            XCTAssertEqual(allowed, Array(repeating: 400, count: 9), "allowlisted sources pass token.ip, log-only passes client-source")
            let first = try await Self.attempt(client, from: "192.0.2.7")
            let second = try await Self.attempt(client, from: "192.0.2.7")
            XCTAssertEqual([first, second], [400, 429], "a source outside the allowlist is limited")
        }
        let after = Self.value(of: #"modgud_rate_limit_would_reject_total{policy="token.client-source"}"#)
        XCTAssertGreaterThanOrEqual(after - before, 6, "each would-be rejection is counted")
    }

    /// Issue 22: the silent sign-up limit obeys the operator. Log-only drops nothing and counts
    /// what it would have dropped; enforced, it drops silently but counts every drop; raised
    /// during the incident, the very next request from the saturated source gets its mail.
    func testTheSilentSignUpLimitObeysLogOnlyCountsItsDropsAndARaiseActsAtOnce() async throws {
        harness = try await EmailSignInHarness(settings: {
            $0.rateLimitOverrides["signup.ip"] = RateLimitSetting(limit: 2, windowSeconds: 3600, burst: 2, logOnly: true)
        })
        let harness = self.harness!
        let wouldReject = #"modgud_rate_limit_would_reject_total{policy="signup.ip"}"#
        let rejected = #"modgud_rate_limit_rejections_total{policy="signup.ip"}"#
        let (wouldBefore, rejectedBefore) = (Self.value(of: wouldReject), Self.value(of: rejected))
        @Sendable func requestCodes(_ addresses: [String], from source: String, _ client: any TestClientProtocol) async throws {
            for address in addresses {
                let reply = try await client.execute(
                    uri: "/api/account/native/otp/request", method: .post,
                    headers: [.contentType: "application/json", .init("X-Forwarded-For")!: source],
                    body: ByteBuffer(string: #"{"Email":"\#(address)"}"#))
                XCTAssertEqual(reply.status, .ok, "the uniform answer, limited or not")
            }
        }
        let logOnly = (1...6).map { "log-only\($0)@example.com" }
        let enforced = (1...5).map { "enforced\($0)@example.com" }
        try await live { client in
            try await requestCodes(logOnly, from: "198.51.100.20", client)
            _ = try await harness.core.administration.realms.update("dev", metadata: .init()) {
                $0.rateLimitOverrides["signup.ip"]?.logOnly = false
            }
            try await requestCodes(enforced, from: "198.51.100.21", client)
            _ = try await harness.core.administration.realms.update("dev", metadata: .init()) {
                $0.rateLimitOverrides["signup.ip"] = RateLimitSetting(limit: 100_000_000, windowSeconds: 60, burst: 100_000_000)
            }
            try await requestCodes(["after-raise@example.com"], from: "198.51.100.21", client)
        }
        try await harness.allMailDelivered()
        for address in logOnly {
            _ = try await harness.mail(to: address)  // log-only: every sign-up gets its code
        }
        _ = try await harness.mail(to: "after-raise@example.com")  // the raise acted on the next request
        let enforcedMails = try enforced.map { try harness.mails(to: $0).count }.reduce(0, +)
        XCTAssertEqual(enforcedMails, 2, "enforced: the burst of 2, the rest dropped silently")
        XCTAssertGreaterThanOrEqual(Self.value(of: wouldReject) - wouldBefore, 4, "log-only counts what it would have dropped")
        XCTAssertGreaterThanOrEqual(Self.value(of: rejected) - rejectedBefore, 3, "every silent drop is counted")
    }

    static func value(of series: String) -> Double {
        let text = String(decoding: MetricsExposition.registry.emitToBuffer(), as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1)) ?? 0
        }
        return 0
    }
}
