import EventSourcing
import Foundation
import Hummingbird
import ModgudService

/// Signing in and out (issue 31): an email code of the operator realm, then a session cookie.
extension ConsoleController {
    func registerSignIn(on router: Router<ModgudRequestContext>) {
        router.get("console/sign-in") { request, context in
            let started = ContinuousClock.now
            if let token = Self.cookie(request), (try? await console.authenticate(token: token)) != nil { return ConsoleResponse.redirect("/console") }
            return ConsoleResponse.page(ConsoleTemplates.render("sign-in", ["title": "Sign in"]), started: started)
        }
        router.post("console/sign-in") { request, context in await requestCode(request, context) }
        router.post("console/sign-in/code") { request, context in await redeemCode(request, context) }
        router.post("console/sign-out") { request, context in
            await action(request, context) { session, _ in
                try await console.signOut(token: Self.cookie(request) ?? "", metadata: metadata(session, context))
                return ConsoleResponse.redirect("/console/sign-in", cookie: clearedCookie())
            }
        }
    }

    /// The same page for every address: whether it belongs to an operator is not told.
    private func requestCode(_ request: Request, _ context: ModgudRequestContext) async -> Response {
        let started = ContinuousClock.now
        guard Self.sameOrigin(request) else { return signInPage("sign-in", [:], error: "Refused: the form did not come from this console.", status: .forbidden, started) }
        do {
            let form = try await self.form(request)
            let email = String((form["email"] ?? "").prefix(320))
            guard !email.isEmpty else { return signInPage("sign-in", [:], error: "Enter your email address.", status: .badRequest, started) }
            let source = SourceAddress.key(peer: context.peerAddress, forwardedFor: request.headers[.forwardedFor], trustedProxies: configuration.trustedProxies)
            try await console.requestCode(email: email, source: source, metadata: EventMetadata(correlationID: context.id, actor: "console:sign-in"))
            return signInPage("sign-in-code", ["email": email], started)
        } catch let limited as RateLimited {
            return signInPage("sign-in", [:], error: "Too many requests; try again in \(limited.retryAfterSeconds) s.", status: .tooManyRequests, started)
        } catch let refused as ConsoleRefusal {
            return signInPage("sign-in", [:], error: refused.message, status: refused.status, started)
        } catch {
            ServerFailure.log(error, context: context, endpoint: "console", unavailable: StoreFailure.meansDatabaseUnavailable(error))
            return signInPage("sign-in", [:], error: "The code could not be sent; try again shortly.", status: .serviceUnavailable, started)
        }
    }

    private func redeemCode(_ request: Request, _ context: ModgudRequestContext) async -> Response {
        let started = ContinuousClock.now
        guard Self.sameOrigin(request) else { return signInPage("sign-in", [:], error: "Refused: the form did not come from this console.", status: .forbidden, started) }
        var email = ""
        do {
            let form = try await self.form(request)
            email = String((form["email"] ?? "").prefix(320))
            let code = form["code"] ?? ""
            let metadata = EventMetadata(correlationID: context.id, actor: "console:sign-in")
            let (token, _) = try await console.signIn(email: email, code: code, totp: form["totp"], metadata: metadata)
            return ConsoleResponse.redirect("/console", cookie: sessionCookie(token))
        } catch let refused as OAuthError {
            return signInPage("sign-in-code", ["email": email], error: refused.description, status: .badRequest, started)
        } catch is OperatorConsole.NotAnOperator {
            let message = "This account is not an operator. Ask an operator to run `modgud console add-operator` for it."
            return signInPage("message", ["message": message, "link": ["href": "/console/sign-in", "label": "Sign in with another address"]],
                title: "Not an operator", status: .forbidden, started)
        } catch let limited as RateLimited {
            return signInPage("sign-in-code", ["email": email], error: "Too many attempts; try again in \(limited.retryAfterSeconds) s.", status: .tooManyRequests, started)
        } catch let refused as ConsoleRefusal {
            return signInPage("sign-in", [:], error: refused.message, status: refused.status, started)
        } catch {
            ServerFailure.log(error, context: context, endpoint: "console", unavailable: StoreFailure.meansDatabaseUnavailable(error))
            return signInPage("sign-in-code", ["email": email], error: "Sign-in failed on the server; try again shortly.", status: .serviceUnavailable, started)
        }
    }

    private func signInPage(
        _ template: String, _ values: [String: Any], title: String = "Sign in", error: String? = nil, status: HTTPResponse.Status = .ok,
        _ started: ContinuousClock.Instant
    ) -> Response {
        var values = values
        values["title"] = title
        values["error"] = error
        return ConsoleResponse.page(ConsoleTemplates.render(template, values), status: status, started: started)
    }
}
