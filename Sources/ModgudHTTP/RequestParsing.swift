import Foundation
import Hummingbird
import ModgudService

/// The parsing every OAuth endpoint shares: realm by Host, form body, client credentials.
struct RequestParsing: Sendable {
    let realms: RealmDirectory
    let configuration: HTTPConfiguration

    enum Failure: Error {
        case response(Response)
    }

    /// The realm of the request's Host, or a 404 `Realm.NotFound` problem.
    /// The issuer is `<scheme>://<host>`, or with the realm's `issuerTrailingSlash`
    /// `<scheme>://<host>/` (Auth0's form); `Self.base(of:)` gives the URL endpoints hang off.
    func realm(_ request: Request) async throws -> (entry: RealmDirectory.Entry, issuer: String) {
        let host = request.head.authority ?? ""
        guard !host.isEmpty, let entry = try await realms.realm(forHost: host) else {
            throw Failure.response(Problem.response("Realm.NotFound", status: 404, detail: "No realm serves this host."))
        }
        return (entry, "\(configuration.issuerScheme)://\(host.lowercased())" + (entry.settings.issuerTrailingSlash ? "/" : ""))
    }

    /// The issuer without a trailing slash: what endpoint URLs are built on.
    static func base(of issuer: String) -> String {
        issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
    }

    /// The form body, with the content type, size and repetition rules of RFC 6749.
    func form(_ request: Request) async throws -> FormBody {
        guard let type = request.headers[.contentType]?.lowercased(), type.hasPrefix("application/x-www-form-urlencoded") else {
            throw Failure.response(OAuthResponses.error(.invalidRequest("The request body must be application/x-www-form-urlencoded.")))
        }
        let buffer = try await oauthBody(request)
        do {
            return try FormBody(Array(buffer.readableBytesView))
        } catch .repeated(let name) {
            throw Failure.response(OAuthResponses.error(.invalidRequest("The parameter \(name) must not be repeated.")))
        } catch .nulCharacter {
            throw Failure.response(OAuthResponses.error(.invalidRequest("Parameters must not contain NUL characters.")))
        } catch {
            throw Failure.response(OAuthResponses.error(.invalidRequest("The request body is not valid form encoding.")))
        }
    }

    /// The token endpoint's parameters: a form (RFC 6749 section 3.2), or a JSON object as
    /// Auth0's SDKs send (issue 14). A JSON member's string is its value; an object or array
    /// member (Auth0's `authn_response`) is its JSON text; `resource` may be an array of
    /// strings; null is absent. The form's rules hold: no NUL, the same size limit.
    func tokenParameters(_ request: Request) async throws -> FormBody {
        guard let type = request.headers[.contentType]?.lowercased(), type.hasPrefix("application/json") else { return try await form(request) }
        let buffer = try await oauthBody(request)
        // RFC 6749 section 3.2's "MUST NOT be included more than once", for JSON too (issue 44).
        do {
            try JSONSyntax.check(Array(buffer.readableBytesView))
        } catch .duplicateMember(let name) {
            throw Failure.response(OAuthResponses.error(.invalidRequest("The parameter \(name) is given more than once.")))
        } catch {
            throw Failure.response(OAuthResponses.error(.invalidRequest("The request body is not a JSON object.")))
        }
        guard let members = try? JSONDecoder().decode([String: StrictJSON.AnyJSONValue].self, from: Data(buffer.readableBytesView)) else {
            throw Failure.response(OAuthResponses.error(.invalidRequest("The request body is not a JSON object.")))
        }
        if members.contains(where: { $0.key.unicodeScalars.contains("\u{0}") || $0.value.containsNUL }) {
            throw Failure.response(OAuthResponses.error(.invalidRequest("Parameters must not contain NUL characters.")))
        }
        var values: [String: [String]] = [:]
        for (name, value) in members {
            switch value {
            case .null: continue
            case .string(let text): values[name] = [text]
            case .bool(let flag): values[name] = [flag ? "true" : "false"]
            case .number(let number): values[name] = [number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)]
            case .array(let items) where FormBody.repeatable.contains(name):
                values[name] = try items.map { item in
                    guard case .string(let text) = item else {
                        throw Failure.response(OAuthResponses.error(.invalidRequest("\(name) is a string or an array of strings.")))
                    }
                    return text
                }
            case .array, .object: values[name] = [String(decoding: try JSONEncoder().encode(value), as: UTF8.self)]
            }
        }
        return FormBody(values: values)
    }

    /// An OAuth endpoint's body within the size limit (413 `invalid_request` beyond it).
    private func oauthBody(_ request: Request) async throws -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: configuration.maxBodyBytes)
        } catch {
            throw Failure.response(OAuthResponses.json(
                OAuthResponses.ErrorBody(error: "invalid_request", errorDescription: "The request body is too large."), status: .contentTooLarge))
        }
    }

    /// The rate-limit key of the request's source.
    func source(_ request: Request, context: ModgudRequestContext) -> String {
        SourceAddress.key(
            peer: context.peerAddress, forwardedFor: request.headers[.forwardedFor], trustedProxies: configuration.trustedProxies)
    }

    /// A JSON body of Modgud's own API: `application/json`, within the size limit, no unknown
    /// members (400 problems otherwise). `ignoringCase`: the seed's endpoints bind member names
    /// as its ASP.NET binder does, case-insensitively (`StrictJSON.decode`).
    func json<T: Decodable>(_ type: T.Type, _ request: Request, allowed: Set<String>?, ignoringCase: Bool = false) async throws -> T {
        try await strictJSON(T.self, request, allowed: allowed, ignoringCase: ignoringCase) { failure in
            switch failure {
            case .unsupportedMediaType: Problem.response("Request.UnsupportedMediaType", status: 415, detail: "The body must be application/json.")
            case .tooLarge: Problem.response("Request.TooLarge", status: 413, detail: "The request body is too large.")
            case .decoding(.malformed):
                Problem.response("Request.MalformedJSON", status: 400, detail: "The body is not a JSON object of the expected shape.")
            case .decoding(.unknownMember(let name)): Problem.response("Request.UnknownMember", status: 400, detail: "Unknown member \(name).")
            case .decoding(.invalid(let detail)): Problem.response("Request.Invalid", status: 400, detail: detail)
            case .decoding(.nulCharacter): Problem.response("Request.InvalidText", status: 400, detail: "Text must not contain NUL characters.")
            }
        }
    }

    /// Why a strict JSON body was refused.
    enum JSONBodyFailure: Error {
        case unsupportedMediaType
        case tooLarge
        case decoding(StrictJSON.Failure)
    }

    /// A JSON body decoded strictly (`StrictJSON`), its refusals answered by `answer`: Modgud's
    /// own endpoints answer problems (`json`), Auth0's OAuth errors.
    func strictJSON<T: Decodable>(
        _ type: T.Type, _ request: Request, allowed: Set<String>?, ignoringCase: Bool = false, answer: (JSONBodyFailure) -> Response
    ) async throws -> T {
        guard let contentType = request.headers[.contentType]?.lowercased(), contentType.hasPrefix("application/json") else {
            throw Failure.response(answer(.unsupportedMediaType))
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: configuration.maxBodyBytes)
        } catch {
            throw Failure.response(answer(.tooLarge))
        }
        do {
            return try StrictJSON.decode(T.self, from: Array(buffer.readableBytesView), allowed: allowed, ignoringCase: ignoringCase)
        } catch {
            throw Failure.response(answer(.decoding(error)))
        }
    }

    /// Client credentials: `client_secret_basic` (RFC 6749 section 2.3.1) or `client_secret_post`,
    /// never both; or only `client_id` for a public client.
    func clientCredentials(_ request: Request, _ form: FormBody) throws -> (id: String, secret: String?) {
        if let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("basic ") {
            guard form["client_secret"] == nil else {
                throw OAuthError.invalidRequest("Use one client authentication method, not two.")
            }
            guard let decoded = Data(base64Encoded: String(authorization.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
                let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":"),
                let id = Self.formDecode(String(text[..<colon])), let secret = Self.formDecode(String(text[text.index(after: colon)...]))
            else {
                throw OAuthError.invalidClient(attempted: true)
            }
            if let formID = form["client_id"], formID != id { throw OAuthError.invalidRequest("client_id differs from the authenticated client.") }
            return (id, secret)
        }
        guard let id = form["client_id"] else { throw OAuthError.invalidRequest("client_id is required.") }
        return (id, form["client_secret"])
    }

    /// RFC 6749 section 2.3.1: Basic credentials are form-encoded before base64.
    static func formDecode(_ text: String) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
