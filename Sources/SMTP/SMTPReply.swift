import NIOCore

/// One SMTP reply: a code and its text lines (RFC 5321 section 4.2; multi-line replies join
/// lines written `250-...` up to the last one, written `250 ...`).
public struct SMTPReply: Sendable, Equatable {
    public var code: Int
    public var lines: [String]

    public var text: String { lines.joined(separator: " ") }
}

/// Frames bytes into `SMTPReply`s. Accepts CRLF and bare LF; refuses lines over 4 KiB.
struct SMTPReplyDecoder: ByteToMessageDecoder {
    typealias InboundOut = SMTPReply
    private var pending: [String] = []
    private var pendingCode: Int?
    static let maxLineLength = 4096

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > Self.maxLineLength { throw SMTPError.replyTooLong }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        guard length <= Self.maxLineLength else { throw SMTPError.replyTooLong }
        var line = buffer.readString(length: length) ?? ""
        buffer.moveReaderIndex(forwardBy: 1)
        if line.hasSuffix("\r") { line.removeLast() }
        let bytes = Array(line.utf8)
        guard bytes.count >= 3, bytes[0...2].allSatisfy({ (0x30...0x39).contains($0) }), let code = Int(String(line.prefix(3))) else {
            throw SMTPError.malformedReply(line)
        }
        if let pendingCode, pendingCode != code { throw SMTPError.malformedReply(line) }
        let more = bytes.count > 3 && bytes[3] == UInt8(ascii: "-")
        pending.append(bytes.count > 4 ? String(line.dropFirst(4)) : "")
        if more {
            pendingCode = code
            return .continue
        }
        context.fireChannelRead(wrapInboundOut(SMTPReply(code: code, lines: pending)))
        pending = []
        pendingCode = nil
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue, buffer.readableBytes > 0 {}
        return .needMoreData
    }
}
