import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Building requests and reading answers: the helpers every flow shares.
extension ModgudClient {
    /// The body of a 2xx answer, else the documented error.
    func checked(_ answer: (Data, HTTPURLResponse)) throws -> Data {
        guard (200..<300).contains(answer.1.statusCode) else { throw Self.error(answer.1, answer.0) }
        return answer.0
    }

    static func error(_ response: HTTPURLResponse, _ data: Data) -> ModgudError {
        ModgudError.from(status: response.statusCode, headers: response.allHeaderFields, body: data)
    }

    static func form(_ url: URL, _ fields: [(String, String)]) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        request.httpBody = Data(
            fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&").utf8)
        return request
    }

    static func json(_ url: URL, method: String = "POST", _ body: [String: Any]?) -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = method
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        }
        return request
    }

    func discovery() async throws -> Discovery {
        if let discovered { return discovered }
        let url = URL(string: configuration.issuerText + "/.well-known/openid-configuration")!
        let found = try Discovery(json: try checked(try await exchange(URLRequest(url: url))), expectedIssuer: configuration.issuerText)
        discovered = found
        return found
    }

    /// A Modgud endpoint under the issuer.
    func endpoint(_ path: String) -> URL {
        URL(string: configuration.issuerText + path)!
    }

    /// One exchange; a failure to reach the server is `.transport`.
    static func transmit(_ request: URLRequest, on urlSession: URLSession) async throws -> (Data, HTTPURLResponse) {
        let (data, response): (Data, URLResponse)
        do {
            (data, response) = try await urlSession.data(for: request)
        } catch {
            throw ModgudError.transport(error.localizedDescription)
        }
        guard let http = response as? HTTPURLResponse else { throw ModgudError.transport("not an HTTP response") }
        return (data, http)
    }
}
