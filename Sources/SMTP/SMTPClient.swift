import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// Delivers one message per connection over SMTP (RFC 5321): EHLO, STARTTLS (RFC 3207) or
/// implicit TLS, AUTH PLAIN or LOGIN (RFC 4954), MAIL, RCPT, DATA, QUIT. Every reply is
/// awaited with the configured timeout.
public struct SMTPClient: Sendable {
    public let configuration: SMTPConfiguration
    private let group: any EventLoopGroup
    private let tlsContext: NIOSSLContext?

    public init(configuration: SMTPConfiguration, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) throws {
        self.configuration = configuration
        self.group = group
        if configuration.security == .none {
            tlsContext = nil
        } else {
            var tls = TLSConfiguration.makeClientConfiguration()
            if let file = configuration.trustRootsFile {
                tls.additionalTrustRoots = [.file(file)]
            }
            tlsContext = try NIOSSLContext(configuration: tls)
        }
    }

    /// Sends `message`; throws `SMTPError` (or a connection or TLS error) when it was not accepted.
    public func send(_ message: MailMessage, date: Date = Date()) async throws {
        for address in [configuration.from, message.to] where address.contains(where: { "\r\n<>".contains($0) }) {
            throw SMTPError.invalidAddress(address)
        }
        let domain = configuration.from.split(separator: "@").last.map(String.init) ?? "localhost"
        let data = message.rendered(
            from: configuration.from, date: date, messageID: "\(UUID().uuidString.lowercased())@\(domain)",
            boundary: "modgud-\(UUID().uuidString.lowercased())")
        let channel = try await connect()
        let timeout = configuration.timeoutSeconds
        // The timer closes the channel, and the conversation then fails with whatever the close
        // caused (a closed stream, a write error); which of the two tasks reports first is up to
        // the scheduler. The flag, set before the close, decides: once the timer fired, the
        // failure is the timeout.
        let timedOut = TimerFlag()
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await channel.executeThenClose { inbound, outbound in
                        var session = SMTPSession(
                            configuration: configuration, channel: channel.channel, tlsContext: tlsContext, replies: inbound.makeAsyncIterator(),
                            outbound: outbound)
                        try await session.deliver(to: message.to, data: data)
                    }
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(timeout))
                    timedOut.fire()
                    channel.channel.close(promise: nil)
                    throw SMTPError.timeout
                }
                defer { group.cancelAll() }
                try await group.next()
            }
        } catch {
            if timedOut.fired { throw SMTPError.timeout }
            throw error
        }
    }

    private func connect() async throws -> NIOAsyncChannel<SMTPReply, ByteBuffer> {
        let implicitTLS = configuration.security == .tls ? tlsContext : nil
        let host = configuration.host
        let serverName = configuration.tlsServerName ?? host
        return try await ClientBootstrap(group: group)
            .connectTimeout(.milliseconds(Int64(configuration.timeoutSeconds * 1000)))
            .connect(host: host, port: configuration.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let implicitTLS {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: implicitTLS, serverHostname: serverName))
                    }
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(SMTPReplyDecoder()))
                    return try NIOAsyncChannel<SMTPReply, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
    }
}

/// The conversation on one connection.
struct SMTPSession {
    let configuration: SMTPConfiguration
    let channel: any Channel
    let tlsContext: NIOSSLContext?
    var replies: NIOAsyncChannelInboundStream<SMTPReply>.AsyncIterator
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

    mutating func deliver(to recipient: String, data: String) async throws {
        try await expect("greeting", 220)
        var capabilities = try await ehlo()
        if configuration.security == .startTLS {
            guard capabilities.contains(where: { $0.uppercased() == "STARTTLS" }), let tlsContext else {
                throw SMTPError.insecure("the SMTP server does not offer STARTTLS")
            }
            try await command("STARTTLS", expecting: 220)
            // RFC 3207 section 4.2: everything known before TLS is discarded; EHLO again.
            let serverName = configuration.tlsServerName ?? configuration.host
            let channel = self.channel
            try await channel.eventLoop.submit {
                let handler = try NIOSSLClientHandler(context: tlsContext, serverHostname: serverName)
                try channel.pipeline.syncOperations.addHandler(handler, position: .first)
            }.get()
            capabilities = try await ehlo()
        }
        if let username = configuration.username, let password = configuration.password {
            guard configuration.security != .none else { throw SMTPError.insecure("credentials are never sent without TLS") }
            try await authenticate(username: username, password: password, capabilities: capabilities)
        }
        try await command("MAIL FROM:<\(configuration.from)>", expecting: 250)
        try await command("RCPT TO:<\(recipient)>", expecting: 250, 251)
        try await command("DATA", expecting: 354)
        try await write(Self.dotStuffed(data) + ".\r\n")
        try await expect("message", 250)
        try? await write("QUIT\r\n")
    }

    /// RFC 5321 section 4.5.2: a line starting with "." gets one more.
    static func dotStuffed(_ data: String) -> String {
        data.components(separatedBy: "\r\n").map { $0.hasPrefix(".") ? "." + $0 : $0 }.joined(separator: "\r\n")
    }

    private mutating func ehlo() async throws -> [String] {
        try await write("EHLO \(configuration.heloName)\r\n")
        let reply = try await expect("EHLO", 250)
        return Array(reply.lines.dropFirst())
    }

    private mutating func authenticate(username: String, password: String, capabilities: [String]) async throws {
        let mechanisms = capabilities.filter { $0.uppercased().hasPrefix("AUTH") }
            .flatMap { $0.uppercased().dropFirst(4).split(whereSeparator: { $0 == " " || $0 == "=" }) }.map(String.init)
        if mechanisms.contains("PLAIN") {
            let token = Data([0] + Array(username.utf8) + [0] + Array(password.utf8)).base64EncodedString()
            try await command("AUTH PLAIN \(token)", expecting: 235, redacted: "AUTH PLAIN")
        } else if mechanisms.contains("LOGIN") {
            try await command("AUTH LOGIN", expecting: 334)
            try await command(Data(username.utf8).base64EncodedString(), expecting: 334, redacted: "AUTH LOGIN user")
            try await command(Data(password.utf8).base64EncodedString(), expecting: 235, redacted: "AUTH LOGIN password")
        } else {
            throw SMTPError.noSupportedAuthMechanism
        }
    }

    @discardableResult
    private mutating func command(_ line: String, expecting codes: Int..., redacted: String? = nil) async throws -> SMTPReply {
        try await write(line + "\r\n")
        return try await expect(redacted ?? String(line.prefix(while: { $0 != ":" && $0 != " " })), codes)
    }

    @discardableResult
    private mutating func expect(_ what: String, _ codes: Int...) async throws -> SMTPReply {
        try await expect(what, codes)
    }

    private mutating func expect(_ what: String, _ codes: [Int]) async throws -> SMTPReply {
        guard let reply = try await replies.next() else { throw SMTPError.connectionClosed }
        guard codes.contains(reply.code) else { throw SMTPError.unexpectedReply(command: what, code: reply.code, text: reply.text) }
        return reply
    }

    private func write(_ text: String) async throws {
        try await outbound.write(ByteBuffer(string: text))
    }
}

/// Whether a timer fired (shared by the timer task and the caller).
private final class TimerFlag: Sendable {
    private let state = Mutex(false)
    var fired: Bool { state.withLock { $0 } }
    func fire() { state.withLock { $0 = true } }
}
