import NIOCore
import NIOHTTP1
import NIOPosix

/// A keep-alive HTTP/1.1 client connection for load and failure tests: one request at a
/// time, native (SwiftNIO), so a load generator on the same two cores costs little CPU.
struct LoadHTTPConnection {
    /// One answer: the status and the body.
    struct Reply: Sendable {
        var status: Int
        var body: [UInt8]
        var headers = HTTPHeaders()
    }

    /// Sends one request on the connection and waits for its answer.
    struct Sender {
        let send: (_ method: HTTPMethod, _ path: String, _ contentType: String?, _ payload: String, _ headers: [(String, String)]) async throws -> Reply

        func callAsFunction(_ method: HTTPMethod, _ path: String, _ contentType: String?, _ payload: String, headers: [(String, String)] = [])
            async throws -> Reply
        {
            try await send(method, path, contentType, payload, headers)
        }
    }

    /// The connection broke or the server closed it before answering.
    struct Broken: Error {}

    let host: String
    let port: Int
    /// The `Host` header (the realm's host; the load balancer passes it on).
    let authority: String

    /// Opens a connection and runs `body` with a function that sends one request and waits
    /// for its answer; the connection closes when `body` returns or throws.
    /// - Parameter forwardedFor: an `X-Forwarded-For` every request carries (a client address
    ///   the server believes when it trusts the loopback as its proxy).
    func session<T>(forwardedFor: String? = nil, _ body: (_ send: Sender) async throws -> T) async throws -> T
    {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            var responses = inbound.makeAsyncIterator()
            return try await body(Sender { method, path, contentType, payload, extra in
                var headers = HTTPHeaders()
                headers.add(contentsOf: extra)
                headers.add(name: "Host", value: authority)
                if let forwardedFor { headers.add(name: "X-Forwarded-For", value: forwardedFor) }
                // What a native app's HTTP stack sends: the server records it with every event
                // it writes for the request (issue 43), so the bench pays what apps make it pay.
                headers.add(name: "User-Agent", value: "Acme/41 CFNetwork/1568.200.51 Darwin/24.1.0")
                headers.add(name: "Content-Length", value: String(payload.utf8.count))
                if let contentType { headers.add(name: "Content-Type", value: contentType) }
                try await outbound.write(.head(HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: headers)))
                if !payload.isEmpty { try await outbound.write(.body(.byteBuffer(ByteBuffer(string: payload)))) }
                try await outbound.write(.end(nil))
                var status = 0
                var answered = HTTPHeaders()
                var received: [UInt8] = []
                while let part = try await responses.next() {
                    switch part {
                    case .head(let head):
                        status = Int(head.status.code)
                        answered = head.headers
                    case .body(let buffer): received += buffer.readableBytesView
                    case .end: return Reply(status: status, body: received, headers: answered)
                    }
                }
                throw Broken()
            })
        }
    }
}
