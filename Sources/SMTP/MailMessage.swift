import Foundation

/// One mail: a plain-text and an HTML body of the same content.
public struct MailMessage: Sendable, Equatable, Codable {
    public var to: String
    public var subject: String
    public var text: String
    public var html: String

    public init(to: String, subject: String, text: String, html: String) {
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
    }

    /// The message as RFC 5322 text with a MIME multipart/alternative body (RFC 2046
    /// section 5.1.4), UTF-8 parts in base64, CRLF line ends. Header values are stripped of
    /// CR and LF (no header injection); a non-ASCII subject is RFC 2047 encoded.
    public func rendered(from: String, date: Date, messageID: String, boundary: String) -> String {
        var lines = [
            "From: \(Self.headerSafe(from))",
            "To: \(Self.headerSafe(to))",
            "Subject: \(Self.encodedWord(subject))",
            "Date: \(Self.rfc5322Date(date))",
            "Message-ID: <\(Self.headerSafe(messageID))>",
            "MIME-Version: 1.0",
            "Content-Type: multipart/alternative; boundary=\"\(boundary)\"",
            "",
        ]
        for (type, body) in [("text/plain", text), ("text/html", html)] {
            lines.append("--\(boundary)")
            lines.append("Content-Type: \(type); charset=utf-8")
            lines.append("Content-Transfer-Encoding: base64")
            lines.append("")
            lines.append(contentsOf: Self.base64Lines(body))
        }
        lines.append("--\(boundary)--")
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    static func headerSafe(_ value: String) -> String {
        String(value.unicodeScalars.filter { $0 != "\r" && $0 != "\n" })
    }

    /// RFC 2047 section 4.1 "B" encoding when the value is not plain printable ASCII.
    static func encodedWord(_ value: String) -> String {
        let safe = headerSafe(value)
        if safe.unicodeScalars.allSatisfy({ $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F }) { return safe }
        return "=?UTF-8?B?\(Data(safe.utf8).base64EncodedString())?="
    }

    /// Base64 in lines of 76 characters (RFC 2045 section 6.8).
    static func base64Lines(_ text: String) -> [String] {
        let encoded = Array(Data(text.utf8).base64EncodedString())
        return stride(from: 0, to: encoded.count, by: 76).map { String(encoded[$0..<min($0 + 76, encoded.count)]) }
    }

    /// RFC 5322 section 3.3, always in UTC.
    static func rfc5322Date(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.weekday, .day, .month, .year, .hour, .minute, .second], from: date)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return "\(days[(parts.weekday ?? 1) - 1]), \(parts.day ?? 1) \(months[(parts.month ?? 1) - 1]) \(parts.year ?? 1970) "
            + "\(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) +0000"
    }
}
