import EventSourcing
import Foundation
import HTTPTypes
import Hummingbird
import ModgudDomain
import ModgudService

/// The operator console under /console (issue 31): server-rendered pages over the same
/// services as the admin API. Every page needs a console session; every POST also needs the
/// session's CSRF token and, when the browser names one, the console's own origin.
struct ConsoleController: Sendable {
    let console: OperatorConsole
    let admin: Administration
    let configuration: ConsoleConfiguration
    let operations: OperationsService
    /// Which `Host` names the console answers to (issue 67).
    let hostCheck: ConsoleHostCheck
    static let cookieName = "modgud_console"

    func register(on router: Router<ModgudRequestContext>) {
        // Applies to the routes added after it: the console's, registered last.
        if configuration.hostnames != .any { router.add(middleware: hostCheck) }
        router.get("console/static/console.css") { _, _ in ConsoleResponse.file(ConsoleTemplates.stylesheet, contentType: "text/css; charset=utf-8") }
        router.get("console/static/htmx.min.js") { _, _ in
            ConsoleResponse.file(ConsoleTemplates.htmx, contentType: "text/javascript; charset=utf-8")
        }
        router.get("console/static/console.js") { _, _ in
            ConsoleResponse.file(ConsoleTemplates.script, contentType: "text/javascript; charset=utf-8")
        }
        registerSignIn(on: router)
        registerPasskeys(on: router)
        registerOperations(on: router)
        registerRealms(on: router)
        registerFailures(on: router)
        registerRealmSetup(on: router)
        registerClients(on: router)
        registerUsers(on: router)
        registerDocs(on: router)
    }

    // MARK: Plumbing

    /// A read page: the operator's session or a redirect to sign-in.
    func page(_ request: Request, _ context: ModgudRequestContext, _ build: (OperatorConsole.Operator) async throws -> ConsolePage) async
        -> Response
    {
        let started = ContinuousClock.now
        let session: OperatorConsole.Operator?
        do {
            session = try await console.authenticate(token: Self.cookie(request) ?? "")
        } catch {
            return await failure(error, context: context, started: started, session: nil)
        }
        guard let session else { return ConsoleResponse.redirect("/console/sign-in") }
        do {
            return try await render(build(session), session: session, started: started)
        } catch {
            return await failure(error, context: context, started: started, session: session)
        }
    }

    /// A form post: same origin, a live session and its CSRF token, or 403 and nothing done.
    func action(
        _ request: Request, _ context: ModgudRequestContext, _ perform: (OperatorConsole.Operator, FormBody) async throws -> Response
    ) async -> Response {
        let started = ContinuousClock.now
        guard Self.sameOrigin(request) else { return refusal(.forbidden, "Refused: the form did not come from this console.", started) }
        do {
            let form = try await self.form(request)
            guard let session = try await console.authenticate(token: Self.cookie(request) ?? "") else {
                return refusal(.forbidden, "Refused: sign in to the console first.", started)
            }
            guard let presented = form["_csrf"], ConstantTime.equal(presented, session.csrfToken) else {
                return refusal(.forbidden, "Refused: the form's CSRF token is missing or wrong. Reload the page and try again.", started)
            }
            do {
                return try await perform(session, form)
            } catch {
                return await failure(error, context: context, started: started, session: session)
            }
        } catch {
            return await failure(error, context: context, started: started, session: nil)
        }
    }

    /// What events written for this operator carry: the operator as actor.
    func metadata(_ session: OperatorConsole.Operator, _ context: ModgudRequestContext) -> EventMetadata {
        EventMetadata(correlationID: context.id, actor: session.actor, userAgent: context.userAgent)
    }

    func render(_ page: ConsolePage, session: OperatorConsole.Operator?, started: ContinuousClock.Instant, cookie: String? = nil) async throws
        -> Response
    {
        if let path = page.redirect { return ConsoleResponse.redirect(path, cookie: cookie) }
        var values = page.values
        values["title"] = page.title
        values["notice"] = page.notice
        values["error"] = page.error
        values["crumbs"] = page.crumbs.map { ["label": $0.0, "href": $0.1] }
        if let session {
            values["operator"] = true
            values["csrf"] = session.csrfToken
            values["operatorEmail"] = try await admin.users.profile(realm: session.realm, userID: session.userID).profile.email ?? session.userID.uuidString
            if let section = page.section { values["current"] = [section: true] }
        }
        values["serverTime"] = ConsoleFormat.time(admin.now())
        return ConsoleResponse.page(ConsoleTemplates.render(page.template, values), status: page.status, started: started, cookie: cookie)
    }

    private func refusal(_ status: HTTPResponse.Status, _ message: String, _ started: ContinuousClock.Instant) -> Response {
        let html = ConsoleTemplates.render("message", ["title": "Refused", "message": message, "link": ["href": "/console", "label": "Back to the console"]])
        return ConsoleResponse.page(html, status: status, started: started)
    }

    private func failure(_ error: any Error, context: ModgudRequestContext, started: ContinuousClock.Instant, session: OperatorConsole.Operator?)
        async -> Response
    {
        let status: HTTPResponse.Status
        let message: String
        switch error {
        case let refused as ConsoleRefusal:
            (status, message) = (refused.status, refused.message)
        case let refused as ServiceRefusal:
            // The console shows a clash as the form's refusal, as any invalid value.
            status = refused.kind == .notFound ? .notFound : .badRequest
            message = refused.message
        case let limited as RateLimited:
            (status, message) = (.tooManyRequests, "Too many attempts; try again in \(limited.retryAfterSeconds) s.")
        case let failure where StoreFailure.meansDatabaseUnavailable(failure):
            ServerFailure.log(error, context: context, endpoint: "console", unavailable: true)
            (status, message) = (.serviceUnavailable, "The database is unavailable; retry shortly.")
        default:
            ServerFailure.log(error, context: context, endpoint: "console", unavailable: false)
            (status, message) = (.internalServerError, "Something failed on the server (request \(context.id)); see its log.")
        }
        var values: [String: Any] = [
            "title": status == .notFound ? "Not found" : "Could not do that", "message": message, "operator": session != nil,
            "csrf": session?.csrfToken ?? "", "link": ["href": "/console", "label": "Back to the console"],
        ]
        // The header names the signed-in operator on an error page too (issue 43); a database
        // that is away leaves the id.
        if let session {
            let profile = try? await admin.users.profile(realm: session.realm, userID: session.userID).profile
            values["operatorEmail"] = profile?.email ?? session.userID.uuidString.lowercased()
        }
        return ConsoleResponse.page(ConsoleTemplates.render("message", values), status: status, started: started)
    }

    /// The posted form (64 KiB at most, no repeated fields).
    func form(_ request: Request) async throws -> FormBody {
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
            throw ConsoleRefusal(status: .unsupportedMediaType, message: "Send a form.")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: configuration.maxBodyBytes)
        } catch {
            throw ConsoleRefusal(status: .contentTooLarge, message: "The form is larger than \(configuration.maxBodyBytes) bytes.")
        }
        do {
            return try FormBody(Array(buffer.readableBytesView))
        } catch {
            throw ConsoleRefusal.badForm("The form could not be read.")
        }
    }

    // MARK: Cookies and origins

    static func cookie(_ request: Request) -> String? {
        request.cookies[cookieName]?.value
    }

    /// The session cookie (docs/operations/console.md): HttpOnly, SameSite=Strict, Secure unless
    /// the console runs on plain HTTP on loopback; a session cookie, ended by the server's limits.
    func sessionCookie(_ token: String) -> String {
        Cookie(name: Self.cookieName, value: token, path: "/console", secure: configuration.secureCookie, httpOnly: true, sameSite: .strict)
            .description
    }

    func clearedCookie() -> String {
        Cookie(name: Self.cookieName, value: "", maxAge: 0, path: "/console", secure: configuration.secureCookie, httpOnly: true, sameSite: .strict)
            .description
    }

    /// True unless the browser says the request came from elsewhere (Fetch Metadata, then the
    /// Origin header against the Host the request was sent to).
    static func sameOrigin(_ request: Request) -> Bool {
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site != "same-origin", site != "none" { return false }
        guard let origin = request.headers[.origin] else { return true }
        guard let authority = request.head.authority?.lowercased() else { return false }
        let lowered = origin.lowercased()
        return lowered == "http://" + authority || lowered == "https://" + authority
    }
}
