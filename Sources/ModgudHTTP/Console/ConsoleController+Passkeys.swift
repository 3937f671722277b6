import EventSourcing
import Foundation
import HTTPTypes
import Hummingbird
import ModgudService

/// Operators' passkeys (issue 31): the JSON ceremonies `console.js` drives with the browser's
/// passkey dialog, and the page where an operator adds one. Same origin only, JSON only (a
/// form from elsewhere cannot send it without a CORS preflight, which is never granted), and
/// with the session's CSRF token in `X-CSRF-Token` once signed in.
extension ConsoleController {
    struct Begin: Encodable {
        var ceremonyId: String
        var publicKey: CeremonyOptions
    }

    func registerPasskeys(on router: Router<ModgudRequestContext>) {
        router.get("console/me") { request, context in
            await page(request, context) { session in try await mePage(session) }
        }
        router.post("console/sign-in/passkey/begin") { request, context in
            await json(request, context, session: false) { _, _ in
                let begun = try await console.beginPasskeySignIn(metadata: EventMetadata(correlationID: context.id, actor: "console:sign-in"))
                return Self.encode(Begin(ceremonyId: begun.ceremonyID.uuidString, publicKey: begun.options))
            }
        }
        router.post("console/sign-in/passkey/finish") { request, context in
            await json(request, context, session: false) { _, body in
                guard let ceremony = body["ceremonyId"] as? String, let credential = body["credential"] else {
                    throw ConsoleRefusal.badForm("Send ceremonyId and credential.")
                }
                let assertion = String(decoding: try JSONSerialization.data(withJSONObject: credential), as: UTF8.self)
                let (token, _) = try await console.passkeySignIn(
                    ceremonyID: ceremony, assertion: assertion, metadata: EventMetadata(correlationID: context.id, actor: "console:sign-in"))
                var response = Self.encode(["location": "/console"])
                response.headers[.setCookie] = sessionCookie(token)
                return response
            }
        }
        router.post("console/me/passkeys/begin") { request, context in
            await json(request, context, session: true) { session, _ in
                guard let session else { throw ConsoleRefusal(status: .forbidden, message: "Sign in first.") }
                let begun = try await console.beginPasskeyEnrollment(session, metadata: metadata(session, context))
                return Self.encode(Begin(ceremonyId: begun.ceremonyID.uuidString, publicKey: begun.options))
            }
        }
        router.post("console/me/passkeys/finish") { request, context in
            await json(request, context, session: true) { session, body in
                guard let session else { throw ConsoleRefusal(status: .forbidden, message: "Sign in first.") }
                guard let ceremony = body["ceremonyId"] as? String, let credential = body["credential"] else {
                    throw ConsoleRefusal.badForm("Send ceremonyId and credential.")
                }
                let name = (body["name"] as? String).flatMap { $0.isEmpty ? nil : String($0.prefix(100)) }
                let created = try await console.completePasskeyEnrollment(
                    session, ceremonyID: ceremony, attestation: Array(try JSONSerialization.data(withJSONObject: credential)), name: name,
                    metadata: metadata(session, context))
                return Self.encode(["id": created.id.uuidString.lowercased()])
            }
        }
    }

    /// The signed-in operator's own account and passkeys.
    private func mePage(_ session: OperatorConsole.Operator) async throws -> ConsolePage {
        let (state, profile) = try await admin.users.profile(realm: session.realm, userID: session.userID)
        let client = try await admin.clients.get(realm: session.realm, id: OperatorConsole.clientID).settings
        let realm = try await admin.realms.get(session.realm).settings
        let rpID = realm.flatMap { PasskeyService.rpID(client: client, realm: $0) }
        let facts: [[String: String]] = [
            ["label": "Email", "value": profile.email ?? "-"], ["label": "Realm", "value": session.realm],
            ["label": "Roles", "value": state.roles.joined(separator: ", ")], ["label": "Two-factor", "value": state.encryptedTOTPSecret == nil ? "off" : "on"],
        ]
        let passkeys = Self.passkeyRows(try await admin.users.passkeys(realm: session.realm, userID: session.userID))
        var values: [String: Any] = ["realm": session.realm, "userID": session.userID.uuidString.lowercased(), "facts": facts, "passkeys": passkeys]
        if let rpID { values["rpID"] = rpID }
        return ConsolePage(template: "me", title: "Your account", values: values, section: "me")
    }

    /// A JSON call of console.js: same origin, a JSON object within the size limit, and with
    /// `session` a live session and its CSRF token. Errors answer `{"error": "..."}`.
    private func json(
        _ request: Request, _ context: ModgudRequestContext, session needed: Bool,
        _ perform: (OperatorConsole.Operator?, [String: Any]) async throws -> Response
    ) async -> Response {
        guard Self.sameOrigin(request) else { return Self.jsonError(.forbidden, "Refused: the request did not come from this console.") }
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true else {
            return Self.jsonError(.unsupportedMediaType, "Send application/json.")
        }
        do {
            let bytes = try await request.body.collect(upTo: configuration.maxBodyBytes)
            let body = bytes.readableBytes == 0 ? [:] : (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView))) as? [String: Any]
            guard let body else { return Self.jsonError(.badRequest, "The body is not a JSON object.") }
            var session: OperatorConsole.Operator?
            if needed {
                session = try await console.authenticate(token: Self.cookie(request) ?? "")
                guard let live = session, let presented = request.headers[HTTPField.Name("X-CSRF-Token")!], ConstantTime.equal(presented, live.csrfToken)
                else { return Self.jsonError(.forbidden, "Refused: sign in again and reload the page.") }
            }
            return try await perform(session, body)
        } catch let refused as ConsoleRefusal {
            return Self.jsonError(refused.status, refused.message)
        } catch let refused as OAuthError {
            return Self.jsonError(.badRequest, refused.description)
        } catch is OperatorConsole.NotAnOperator {
            return Self.jsonError(.forbidden, "This account is not an operator.")
        } catch let refused as ServiceRefusal {
            let message = refused.code == "Passkey.Unavailable"
                ? "Passkeys need the console's host as RP-ID: modgud console add-operator EMAIL --rp-id HOST." : refused.message
            return Self.jsonError(refused.code == "Passkey.Unavailable" ? .serviceUnavailable : .badRequest, message)
        } catch let limited as RateLimited {
            return Self.jsonError(.tooManyRequests, "Too many attempts; try again in \(limited.retryAfterSeconds) s.")
        } catch {
            ServerFailure.log(error, context: context, endpoint: "console", unavailable: StoreFailure.meansDatabaseUnavailable(error))
            return Self.jsonError(.serviceUnavailable, "The server could not do that now; try again shortly.")
        }
    }

    static func encode(_ value: some Encodable) -> Response {
        var headers = ConsoleResponse.securityHeaders()
        headers[.contentType] = "application/json"
        let data = (try? JSONEncoder().encode(value)) ?? Data("{}".utf8)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func jsonError(_ status: HTTPResponse.Status, _ message: String) -> Response {
        var response = encode(["error": message])
        response.status = status
        return response
    }
}
