// libFuzzer harness for the SMTP reply decoder (RFC 5321 section 4.2), what the mail
// dispatcher reads from a server it does not control (issue 44). Built by `ops/fuzz
// smtp-reply` from SMTPReply.swift and SMTPError.swift, SwiftNIO linked from the debug build;
// the decoder runs in an `EmbeddedChannel` as in production, in the chunks byte 0 chooses.
// Properties beyond "no crash, no hang, no leak": every reply has a three-digit code and no
// line break inside its lines.

import NIOCore
import NIOEmbedded

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSMTPReply(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard size > 0, let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let chunk = max(1, Int(bytes[0]))
    let channel = EmbeddedChannel(handler: ByteToMessageHandler(SMTPReplyDecoder()))
    defer { _ = try? channel.finish() }
    var offset = 1
    while offset < bytes.count {
        let end = min(bytes.count, offset + chunk)
        do {
            try channel.writeInbound(channel.allocator.buffer(bytes: bytes[offset..<end]))
        } catch {
            return 0
        }
        offset = end
        while let reply = try? channel.readInbound(as: SMTPReply.self) {
            guard (0...999).contains(reply.code) else { fatalError("reply code \(reply.code)") }
            guard !reply.lines.contains(where: { $0.contains("\n") || $0.contains("\r\n") }) else { fatalError("a line break inside a line") }
        }
    }
    return 0
}
