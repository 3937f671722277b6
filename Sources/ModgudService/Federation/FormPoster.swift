import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Posts an `application/x-www-form-urlencoded` body and returns the status and body: how
/// Modgud calls a provider's token endpoint (Apple's, issue 48).
public protocol FormPoster: Sendable {
    func post(_ url: String, form: [(String, String)]) async throws -> (status: Int, body: [UInt8])
}

/// Over HTTPS with URLSession: a 10 s timeout, no cookies, no cache.
public final class URLSessionFormPoster: FormPoster, @unchecked Sendable {
    private let session: URLSession

    public init() {
        session = Self.providerSession
    }

    /// The one session Modgud calls providers with (their JWKS, their token endpoints):
    /// ephemeral, a 10 s request and 15 s resource timeout, no cookies, no cache of its own.
    /// One per process, made at first use: a session holds file descriptors until it is
    /// invalidated, and every composition (each test's) would otherwise open its own.
    static let providerSession: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        configuration.timeoutIntervalForResource = 15
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }()

    /// RFC 6749 appendix B: each name and value percent-encoded, `&`-joined.
    public func post(_ url: String, form: [(String, String)]) async throws -> (status: Int, body: [UInt8]) {
        guard let target = URL(string: url) else { throw URLError(.badURL) }
        var request = URLRequest(url: target, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 10)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        request.httpBody = Data(
            form.map { "\($0.0.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }
                .joined(separator: "&").utf8)
        let (body, response) = try await session.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, Array(body))
    }
}
