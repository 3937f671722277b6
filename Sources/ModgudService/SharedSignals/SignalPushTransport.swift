import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How a receiver answered one pushed SET (RFC 8935 section 2).
public enum SignalPushOutcome: Sendable, Equatable {
    /// 202 (or any 2xx): the receiver has it.
    case accepted
    /// 400 with an `err` code (section 2.3): the receiver refuses this SET for good.
    case rejected(String)
    /// No answer, or one that says "later" (5xx, 429, 401…): try again.
    case failed(String)
}

/// POSTs a SET to a receiver's push endpoint.
public protocol SignalPushTransport: Sendable {
    func push(_ token: String, to url: String, authorization: String?) async -> SignalPushOutcome
}

/// The push endpoint over HTTP(S) with URLSession: `application/secevent+jwt`, a 10 s
/// timeout, and no redirects followed (a receiver that moved updates its stream).
public final class URLSessionSignalPushTransport: NSObject, SignalPushTransport, URLSessionTaskDelegate, @unchecked Sendable {
    private var session: URLSession!

    public override init() {
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        configuration.timeoutIntervalForResource = 15
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }

    public func push(_ token: String, to url: String, authorization: String?) async -> SignalPushOutcome {
        guard let target = URL(string: url) else { return .rejected("the endpoint_url is not a URL") }
        var request = URLRequest(url: target)
        request.httpMethod = "POST"
        request.setValue("application/secevent+jwt", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
        request.httpBody = Data(token.utf8)
        do {
            let (body, response) = try await session.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            return Self.outcome(status: status, body: body)
        } catch {
            return .failed("\(type(of: error)): \(error.localizedDescription)")
        }
    }

    /// RFC 8935 section 2.3: a 400 names the error in `err`; other statuses are transient.
    static func outcome(status: Int, body: Data) -> SignalPushOutcome {
        switch status {
        case 200..<300:
            return .accepted
        case 400:
            let error = (try? JSONSerialization.jsonObject(with: body) as? [String: Any]).flatMap { $0["err"] as? String } ?? "invalid_request"
            return .rejected("400 \(error.prefix(100))")
        default:
            return .failed("HTTP \(status)")
        }
    }

    public func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
        completionHandler: @escaping (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
