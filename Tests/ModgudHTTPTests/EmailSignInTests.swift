import EventSourcing
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import MailTestSupport
import ModgudDomain
import ModgudHTTP
@testable import ModgudService
import XCTest

/// Issue 5 acceptance: email codes and magic links through HTTP, real PostgreSQL and a real
/// SMTP server; codes are read from the received mail, never from the database.
final class EmailSignInTests: XCTestCase {
    typealias H = EmailSignInHarness
    var harness: EmailSignInHarness!

    override func tearDown() async throws {
        await harness?.close()
    }

    func testRegistrationCodeThenLoginCodeEndToEnd() async throws {
        harness = try await EmailSignInHarness(settings: { $0.registrationFields.firstname = .optional })
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            // Unknown address under JitOnOtp: a registration code, and no user yet.
            let request = try await H.requestCode(client, "New.User@Example.com", extra: ["FirstName": "Grace"])
            XCTAssertEqual(request.status, .ok)
            XCTAssertEqual(request.body, #"{"Message":"If your email is registered, you will receive a verification code."}"#)
            let usersBeforeProof = try await harness.userCount("new.user@example.com")
            XCTAssertEqual(usersBeforeProof, 0, "no user exists before the code is proven")
            let mail = try await harness.mail(to: "new.user@example.com")
            XCTAssertTrue(mail.tls, "delivered after STARTTLS")
            XCTAssertEqual(mail.authenticated_as, "modgud")
            XCTAssertEqual(mail.subject, "Acme <Sign-in> verification code")
            XCTAssertTrue(try XCTUnwrap(mail.html).contains("Acme &lt;Sign-in&gt;"), "the display name is escaped in HTML")
            let code = try await harness.code(for: "new.user@example.com")

            let tokens = try await H.redeemCode(client, "new.user@example.com", code)
            XCTAssertEqual(tokens.status, .ok, tokens.body)
            XCTAssertEqual(tokens.headers[.cacheControl], "no-store")
            XCTAssertNil(tokens.headers[.setCookie])
            XCTAssertNotNil(tokens.json["access_token"] as? String)
            XCTAssertNotNil(tokens.json["refresh_token"] as? String, "offline_access and a refresh_token grant")
            XCTAssertEqual(tokens.json["scope"] as? String, "openid email offline_access")
            XCTAssertEqual(tokens.json["expires_in"] as? Int, 900)
            let idToken = try XCTUnwrap(tokens.json["id_token"] as? String)
            let jwks = try await client.execute(uri: "/.well-known/jwks.json", method: .get)
            let keys = try await JWTKeyCollection().add(jwksJSON: String(buffer: jwks.body))
            let claims = try await keys.verify(idToken, as: IDTokenClaims.self)
            let usersAfterRedeem = try await harness.userCount("new.user@example.com")
            XCTAssertEqual(usersAfterRedeem, 1)
            let user = try await harness.core.administration.users.state(realm: "dev", id: try XCTUnwrap(UUID(uuidString: claims.sub.value)))
            XCTAssertTrue(user.emailConfirmed)
            XCTAssertNotNil(user.firstName?.sealed, "names are sealed under the user's key (issue 13)")
            let opened = try await harness.core.vault.profile(of: user)
            XCTAssertEqual(opened.firstName, "Grace", "the names submitted with the request are kept")

            // The same address again, after the cooldown: now a login code for the user.
            harness.clock.advance(121)
            _ = try await H.requestCode(client, "new.user@example.com")
            let login = try await harness.code(for: "new.user@example.com", number: 2)
            let isLoginMail = try await harness.mail(to: "new.user@example.com", number: 2, kind: .code).text!.contains("sign in to Acme")
            XCTAssertTrue(isLoginMail)
            let again = try await H.redeemCode(client, "new.user@example.com", login, scope: "openid")
            XCTAssertEqual(again.status, .ok, again.body)
            XCTAssertNil(again.json["refresh_token"], "no offline_access, no refresh token")
            let second = try await keys.verify(try XCTUnwrap(again.json["id_token"] as? String), as: IDTokenClaims.self)
            XCTAssertEqual(second.sub, claims.sub, "the same user signs in")
            let usersAfterLogin = try await harness.userCount("new.user@example.com")
            XCTAssertEqual(usersAfterLogin, 1)
        }
    }

    func testMagicLinkEndToEndWithAConfidentialClient() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let userID = try await harness.registerUser("ada@example.com")
        let basic = "Basic " + Data("conf:\(harness.confidentialSecret)".utf8).base64EncodedString()
        try await harness.app.test(.router) { client in
            let request = try await H.call(
                client, .post, "/api/account/magic-link/request", #"{"Email":"ADA@example.com"}"#, headers: H.json)
            XCTAssertEqual(request.status, .ok)
            XCTAssertEqual(request.body, #"{"Message":"If your email is registered, you will receive a login link."}"#)
            let link = try await harness.magicLink(for: "ada@example.com")
            XCTAssertTrue(link.link.hasPrefix("https://login.acme.test/magic-login?userId="))
            XCTAssertEqual(link.userID, userID.uuidString.lowercased())
            XCTAssertEqual(link.token.count, 43, "32 bytes, base64url, no padding")
            var headers = H.form
            headers[.authorization] = basic
            let fields = [("grant_type", "urn:cocoar:magic"), ("user_id", link.userID), ("magic_token", link.token), ("scope", "openid offline_access")]
            let tokens = try await H.token(client, fields, headers: headers)
            XCTAssertEqual(tokens.status, .ok, tokens.body)
            XCTAssertNotNil(tokens.json["refresh_token"])
            XCTAssertNotNil(tokens.json["id_token"])
            let replay = try await H.token(client, fields, headers: headers)
            XCTAssertEqual(replay.json["error"] as? String, "invalid_grant")
            XCTAssertEqual(replay.json["error_description"] as? String, "Invalid or expired link.")
            // The wrong secret for the confidential client: 401, whatever the link.
            var wrong = H.form
            wrong[.authorization] = "Basic " + Data("conf:nope".utf8).base64EncodedString()
            let wrongSecretStatus = try await H.token(client, fields, headers: wrong).status
            XCTAssertEqual(wrongSecretStatus, .unauthorized)
        }
    }

    func testOTPWithAConfidentialClientUsingClientSecretPost() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        _ = try await harness.registerUser("bob@example.com")
        try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "bob@example.com")
            let code = try await harness.code(for: "bob@example.com")
            let reply = try await H.redeemCode(client, "bob@example.com", code, clientID: "conf", extra: [("client_secret", harness.confidentialSecret)])
            XCTAssertEqual(reply.status, .ok, reply.body)
        }
    }

    func testBothOptInsInOrder() async throws {
        harness = try await EmailSignInHarness(settings: { $0.nativeGrants.enabled = false })
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            for path in ["/api/account/native/otp/request", "/api/account/native/register", "/api/account/magic-link/request"] {
                let reply = try await H.requestCode(client, "ada@example.com", path: path)
                XCTAssertEqual(reply.status, .badRequest, path)
                XCTAssertEqual(reply.headers[.contentType], "application/problem+json")
                XCTAssertEqual(reply.json["title"] as? String, "NativeGrants.Disabled")
            }
            for grant in ["urn:cocoar:otp", "urn:cocoar:magic"] {
                let reply = try await H.token(client, [("grant_type", grant), ("client_id", "app")])
                XCTAssertEqual(reply.json["error"] as? String, "unsupported_grant_type")
                XCTAssertEqual(reply.json["error_description"] as? String, "This grant type is not enabled for this realm.")
            }
        }
        let outboxRows = try await harness.outboxCount()
        XCTAssertEqual(outboxRows, 0)
        var enabled = try await harness.core.administration.realms.get("dev").settings!
        enabled.nativeGrants.enabled = true
        _ = try await harness.core.administration.realms.update("dev", metadata: .init()) { $0 = enabled }
        let fresh = try ModgudCore(pool: harness.database.pool, masterKey: H.masterKey)  // no cached realm
        try await buildApplication(core: fresh, configuration: harness.configuration).test(.router) { client in
            for grant in ["urn:cocoar:otp", "urn:cocoar:magic"] {
                let reply = try await H.token(client, [("grant_type", grant), ("client_id", "plain"), ("username", "a@b.c"), ("otp_code", "123456")])
                XCTAssertEqual(reply.json["error"] as? String, "unauthorized_client", grant)
            }
        }
    }

    func testRequiredNamesAreCheckedBeforeTheUniformBranch() async throws {
        harness = try await EmailSignInHarness(settings: {
            $0.registrationFields.firstname = .required
            $0.registrationFields.lastname = .required
        })
        let harness = self.harness!
        _ = try await harness.registerUser("known@example.com")
        let before = try await harness.eventCount()
        try await harness.app.test(.router) { client in
            for email in ["known@example.com", "unknown@example.com"] {
                for path in ["/api/account/native/otp/request", "/api/account/native/register"] {
                    let noFirst = try await H.requestCode(client, email, path: path, extra: ["LastName": "L"])
                    XCTAssertEqual(noFirst.status, .badRequest)
                    XCTAssertEqual(noFirst.body, #"{"error":"Firstname is required."}"#)
                    let blankLast = try await H.requestCode(client, email, path: path, extra: ["FirstName": "F", "LastName": "  "])
                    XCTAssertEqual(blankLast.body, #"{"error":"Lastname is required."}"#)
                }
            }
            let info = try await H.call(client, .get, "/api/app-info", "", headers: [:])
            XCTAssertEqual(info.status, .ok)
            XCTAssertEqual(
                info.json["RegistrationFields"] as? [String: String],
                ["Email": "Required", "Username": "Off", "Firstname": "Required", "Lastname": "Required"])
            XCTAssertEqual(info.json["NativeGrantsEnabled"] as? Bool, true)
            XCTAssertEqual(info.json["MagicLinkSelfService"] as? Bool, true)
        }
        let eventsAfter = try await harness.eventCount()
        XCTAssertEqual(eventsAfter, before, "nothing issued")
        let outboxAfter = try await harness.outboxCount()
        XCTAssertEqual(outboxAfter, 0)
    }

    func testThreeWrongGuessesBurnTheCodeAndEveryFailureLooksTheSame() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            let code = try await harness.code(for: "ada@example.com")
            let wrong = code == "000000" ? "111111" : "000000"
            var bodies: Set<String> = []
            for _ in 0..<3 {
                let reply = try await H.redeemCode(client, "ada@example.com", wrong)
                XCTAssertEqual(reply.status, .badRequest)
                bodies.insert(reply.body)
            }
            let fourth = try await H.redeemCode(client, "ada@example.com", code)
            XCTAssertEqual(fourth.status, .badRequest, "the 4th try fails even when right")
            bodies.insert(fourth.body)
            let unknown = try await H.redeemCode(client, "nobody@example.com", code)
            bodies.insert(unknown.body)
            let malformed = try await H.redeemCode(client, "ada@example.com", "12ab")
            bodies.insert(malformed.body)
            XCTAssertEqual(bodies, [#"{"error":"invalid_grant","error_description":"Invalid or expired code."}"#])
        }
    }

    func testExpiryCooldownVoidingAndSingleUse() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            let first = try await harness.code(for: "ada@example.com")
            // Within the cooldown: same answer, no second mail.
            harness.clock.advance(60)
            let resendStatus = try await H.requestCode(client, "ada@example.com").status
            XCTAssertEqual(resendStatus, .ok)
            try await harness.allMailDelivered()
            XCTAssertEqual(try harness.mails(to: "ada@example.com").count, 1, "a resend within 2 minutes is silent")
            // After the cooldown a new code voids the old one.
            harness.clock.advance(61)
            _ = try await H.requestCode(client, "ada@example.com")
            let second = try await harness.code(for: "ada@example.com", number: 2)
            if first != second {
                let oldCodeStatus = try await H.redeemCode(client, "ada@example.com", first).status
                XCTAssertEqual(oldCodeStatus, .badRequest, "the old code is void")
            }
            // Expiry: 10 minutes.
            harness.clock.advance(600)
            let expiredError = try await H.redeemCode(client, "ada@example.com", second).json["error"] as? String
            XCTAssertEqual(expiredError, "invalid_grant", "expired")
            harness.clock.advance(1)
            _ = try await H.requestCode(client, "ada@example.com")
            let third = try await harness.code(for: "ada@example.com", number: 3)
            harness.clock.advance(599)
            let liveStatus = try await H.redeemCode(client, "ada@example.com", third).status
            XCTAssertEqual(liveStatus, .ok, "still live at 9:59")
            let reuseStatus = try await H.redeemCode(client, "ada@example.com", third).status
            XCTAssertEqual(reuseStatus, .badRequest, "single use")
        }
    }

    func testTOTPEnrollmentThroughTheAccountEndpointAndTheGate() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            let tokens = try await H.redeemCode(client, "ada@example.com", try await harness.code(for: "ada@example.com"))
            let bearer: HTTPFields = [
                .authorization: "Bearer \(try XCTUnwrap(tokens.json["access_token"] as? String))", .contentType: "application/json",
            ]
            let anonymousStatus = try await H.call(client, .post, "/api/account/totp/enroll", "", headers: H.json).status
            XCTAssertEqual(anonymousStatus, .unauthorized)
            let enrollment = try await H.call(client, .post, "/api/account/totp/enroll", "", headers: bearer)
            XCTAssertEqual(enrollment.status, .ok, enrollment.body)
            let uri = try XCTUnwrap(enrollment.json["OtpauthUri"] as? String)
            XCTAssertTrue(uri.hasPrefix("otpauth://totp/"), uri)
            let secret = try XCTUnwrap(Base32Test.decode(try XCTUnwrap(enrollment.json["Secret"] as? String)))
            let totp = TOTP(secret: secret)
            let wrongConfirm = try await H.call(client, .post, "/api/account/totp/confirm", #"{"Code":"000000"}"#, headers: bearer)
            let right = totp.code(counter: totp.counter(at: harness.clock.now()))
            if right != "000000" { XCTAssertEqual(wrongConfirm.status, .badRequest) }
            let confirm = try await H.call(client, .post, "/api/account/totp/confirm", #"{"Code":"\#(right)"}"#, headers: bearer)
            XCTAssertEqual(confirm.status, .noContent, confirm.body)
            // On already: the service's conflict, a 409 problem by its kind (issue 42).
            let again = try await H.call(client, .post, "/api/account/totp/confirm", #"{"Code":"\#(right)"}"#, headers: bearer)
            XCTAssertEqual(again.status, .conflict, again.body)
            XCTAssertEqual(again.json["title"] as? String, "TOTP.AlreadyEnabled")
            let reenroll = try await H.call(client, .post, "/api/account/totp/enroll", "", headers: bearer)
            XCTAssertEqual(reenroll.status, .conflict, reenroll.body)

            // The gate: missing, wrong, right, then the same step again.
            harness.clock.advance(121)
            _ = try await H.requestCode(client, "ada@example.com")
            let code = try await harness.code(for: "ada@example.com", number: 2)
            let missing = try await H.redeemCode(client, "ada@example.com", code)
            XCTAssertEqual(missing.json["error_description"] as? String, "Two-factor authentication is required; supply totp_code.")
            let wrongTOTP = try await H.redeemCode(client, "ada@example.com", code, extra: [("totp_code", right == "000000" ? "111111" : "000000")])
            XCTAssertEqual(wrongTOTP.json["error_description"] as? String, "Two-factor authentication is required; supply totp_code.", "seed 001: one message for missing and invalid")
            let reused = try await H.redeemCode(client, "ada@example.com", code, extra: [("totp_code", right)])
            XCTAssertEqual(reused.json["error_description"] as? String, "Two-factor authentication is required; supply totp_code.", "the confirming step was spent")
            harness.clock.advance(30)
            let fresh = totp.code(counter: totp.counter(at: harness.clock.now()))
            let ok = try await H.redeemCode(client, "ada@example.com", code, extra: [("totp_code", fresh)])
            XCTAssertEqual(ok.status, .ok, "the code survived the missing-TOTP answer: \(ok.body)")

            // Magic link: the second factor does not burn the first (issue 40). The link survives
            // the missing-TOTP answer, the retry signs in, and that sign-in spends it.
            _ = try await H.call(client, .post, "/api/account/magic-link/request", #"{"Email":"ada@example.com"}"#, headers: H.json)
            let link = try await harness.magicLink(for: "ada@example.com")
            let magic = [("grant_type", "urn:cocoar:magic"), ("client_id", "app"), ("user_id", link.userID), ("magic_token", link.token)]
            let owed = try await H.token(client, magic + [("scope", "openid")])
            XCTAssertEqual(owed.json["error_description"] as? String, "Two-factor authentication is required; supply totp_code.")
            harness.clock.advance(30)
            let next = totp.code(counter: totp.counter(at: harness.clock.now()))
            let signedIn = try await H.token(client, magic + [("scope", "openid"), ("totp_code", next)])
            XCTAssertEqual(signedIn.status, .ok, "the link survived the missing-TOTP answer: \(signedIn.body)")
            harness.clock.advance(30)
            let later = totp.code(counter: totp.counter(at: harness.clock.now()))
            let spent = try await H.token(client, magic + [("scope", "openid"), ("totp_code", later)])
            XCTAssertEqual(spent.json["error_description"] as? String, "Invalid or expired link.", "spent by the sign-in")
        }
    }

    func testOperatorTurnsTOTPOnAndOffThroughTheAdminAPI() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        _ = try await harness.registerUser("ada@example.com")
        let admin: HTTPFields = [.authorization: "Bearer \(H.adminToken)"]
        try await harness.app.test(.router) { client in
            let enabled = try await H.call(client, .post, "/admin/api/realms/dev/users/ada@example.com/totp", "", headers: admin)
            XCTAssertEqual(enabled.status, .ok, enabled.body)
            let uri = try XCTUnwrap(enabled.json["OtpauthUri"] as? String)
            XCTAssertTrue(uri.hasPrefix("otpauth://totp/Acme%20%3CSign-in%3E:ada@example.com?secret="), uri)
            let events = try await harness.databaseText()
            XCTAssertFalse(events.contains(try XCTUnwrap(enabled.json["Secret"] as? String)), "the TOTP secret is sealed in the event")
            _ = try await H.requestCode(client, "ada@example.com")
            let code = try await harness.code(for: "ada@example.com")
            let owed = try await H.redeemCode(client, "ada@example.com", code)
            XCTAssertEqual(owed.json["error_description"] as? String, "Two-factor authentication is required; supply totp_code.")
            let disabled = try await H.call(client, .delete, "/admin/api/realms/dev/users/ada@example.com/totp", "", headers: admin)
            XCTAssertEqual(disabled.status, .ok, disabled.body)
            let ok = try await H.redeemCode(client, "ada@example.com", code)
            XCTAssertEqual(ok.status, .ok, ok.body)
            let anonymous = try await H.call(client, .post, "/admin/api/realms/dev/users/ada@example.com/totp", "", headers: [:])
            XCTAssertEqual(anonymous.status, .unauthorized)
        }
    }

    func testDisabledUserCannotSignInWithACorrectCode() async throws {
        harness = try await EmailSignInHarness()
        let harness = self.harness!
        let id = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            let code = try await harness.code(for: "ada@example.com")
            _ = try await harness.core.administration.users.apply(.disable, realm: "dev", userID: id, metadata: .init())
            let reply = try await H.redeemCode(client, "ada@example.com", code)
            XCTAssertEqual(reply.json["error"] as? String, "invalid_grant")
            XCTAssertEqual(reply.json["error_description"] as? String, "The account cannot sign in.")
            // A disabled user is sent nothing.
            harness.clock.advance(121)
            _ = try await H.requestCode(client, "ada@example.com")
            try await harness.allMailDelivered()
            XCTAssertEqual(try harness.mails(to: "ada@example.com").count, 1)
        }
    }

    func testTwentyConcurrentRedeemsOneSuccessAndOneUser() async throws {
        harness = try await EmailSignInHarness(maxConnections: 40)
        let harness = self.harness!
        _ = try await harness.registerUser("ada@example.com")
        try await harness.app.test(.router) { client in
            _ = try await H.requestCode(client, "ada@example.com")
            _ = try await H.requestCode(client, "fresh@example.com")
            let login = try await harness.code(for: "ada@example.com")
            let registration = try await harness.code(for: "fresh@example.com")
            for (email, code) in [("ada@example.com", login), ("fresh@example.com", registration)] {
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<20 {
                        group.addTask { Int(try await H.redeemCode(client, email, code).status.code) }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                XCTAssertEqual(statuses.filter { $0 == 200 }.count, 1, "\(email): \(statuses)")
                XCTAssertEqual(statuses.filter { $0 == 400 }.count, 19)
            }
        }
        let freshUsers = try await harness.userCount("fresh@example.com")
        XCTAssertEqual(freshUsers, 1, "exactly one user")
        let families = try await harness.core.pool.query("SELECT count(*) FROM token_families").first!.decode(Int.self, at: 0)
        XCTAssertEqual(families, 2, "one sign-in per code")
    }

    /// Seed 001's endpoints bind members as its ASP.NET binder does: `email` from a camelCase
    /// serializer is `Email`; an unknown member, or one member in two spellings, is refused.
    func testSeedEndpointsMatchMemberNamesIgnoringCase() async throws {
        harness = try await EmailSignInHarness(settings: {
            $0.registrationPosture = .jitOnOtp
            $0.registrationFields.firstname = .required
        })
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            // The required first name binds from `firstName`: without it, 400 before anything.
            let nameless = try await H.call(client, .post, "/api/account/native/otp/request", #"{"email":"camel@example.com"}"#, headers: H.json)
            XCTAssertEqual(nameless.body, #"{"error":"Firstname is required."}"#)
            let camel = try await H.call(client, .post, "/api/account/native/otp/request", #"{"email":"camel@example.com","firstName":"Ada"}"#, headers: H.json)
            XCTAssertEqual(camel.status, .ok, camel.body)
            let code = try await harness.code(for: "camel@example.com")
            let redeemed = try await H.redeemCode(client, "camel@example.com", code)
            XCTAssertEqual(redeemed.status, .ok, redeemed.body)
            let twice = try await H.call(client, .post, "/api/account/native/otp/request", #"{"email":"a@example.com","EMAIL":"b@example.com"}"#, headers: H.json)
            XCTAssertEqual(twice.status, .badRequest)
            XCTAssertEqual(twice.json["title"] as? String, "Request.Invalid")
            XCTAssertEqual(twice.json["detail"] as? String, "Email is given twice.")
            let unknown = try await H.call(client, .post, "/api/account/magic-link/request", #"{"emial":"a@example.com"}"#, headers: H.json)
            XCTAssertEqual(unknown.status, .badRequest)
            XCTAssertEqual(unknown.json["title"] as? String, "Request.UnknownMember")
            XCTAssertEqual(unknown.json["detail"] as? String, "Unknown member emial.")
        }
    }

    func testPosturesDecideWhoGetsARegistrationCode() async throws {
        harness = try await EmailSignInHarness(settings: { $0.registrationPosture = .explicitEndpoint })
        let harness = self.harness!
        try await harness.app.test(.router) { client in
            let strictStatus = try await H.requestCode(client, "a@example.com").status
            XCTAssertEqual(strictStatus, .ok)
            let register = try await H.requestCode(client, "b@example.com", path: "/api/account/native/register")
            XCTAssertEqual(register.body, #"{"Message":"If your email is registered, you will receive a verification code."}"#)
            let code = try await harness.code(for: "b@example.com")
            let redeemStatus = try await H.redeemCode(client, "b@example.com", code).status
            XCTAssertEqual(redeemStatus, .ok)
            let registeredUsers = try await harness.userCount("b@example.com")
            XCTAssertEqual(registeredUsers, 1)
            try await harness.allMailDelivered()
            XCTAssertEqual(try harness.mails(to: "a@example.com").count, 0, "ExplicitEndpoint: the OTP request stays strict")
        }
        for posture in [RegistrationPosture.off, .jitOnOtp] {
            _ = try await harness.core.administration.realms.update("dev", metadata: .init()) { $0.registrationPosture = posture }
            let fresh = try ModgudCore(pool: harness.database.pool, masterKey: H.masterKey)
            try await buildApplication(core: fresh, configuration: harness.configuration).test(.router) { client in
                let address = "\(posture.rawValue.lowercased())@example.com"
                let registerStatus = try await H.requestCode(client, address, path: "/api/account/native/register").status
                XCTAssertEqual(registerStatus, .ok)
                // A known, confirmed user gets no login code from it either (seed 001: "the
                // endpoint does nothing").
                let knownStatus = try await H.requestCode(client, "b@example.com", path: "/api/account/native/register").status
                XCTAssertEqual(knownStatus, .ok)
                if posture == .off {
                    let status = try await H.requestCode(client, address).status
                    XCTAssertEqual(status, .ok)
                }
            }
        }
        let outboxLeft = try await harness.outboxCount()
        XCTAssertEqual(outboxLeft, 0, "Off and the register endpoint outside ExplicitEndpoint issue nothing")
        XCTAssertEqual(try harness.mails(to: "off@example.com").count + harness.mails(to: "jitonotp@example.com").count, 0)
        XCTAssertEqual(try harness.mails(to: "b@example.com").count, 1, "only the registration code of ExplicitEndpoint")
    }
}
