import EventSourcing
import Foundation
import Logging

/// Writes each log record as one JSON object per line on standard error (production logs):
/// `time`, `level`, `logger`, `message` and the metadata, keys sorted.
///
/// Every request writes an access line through here, so the line is built by hand rather
/// than with Foundation's JSONEncoder and ISO 8601 formatter, which cost a quarter of the
/// server's CPU for a static document (issue 27; BENCHMARKS.md, "Issue 27").
struct JSONLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info
    let label: String

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [(String, String)] = [
            ("time", JSONLogLine.timestamp(Date())), ("level", event.level.rawValue), ("logger", label), ("message", "\(event.message)"),
        ]
        fields.reserveCapacity(4 + metadata.count + (event.metadata?.count ?? 0))
        // The record's own metadata after the logger's: the later of two equal keys wins.
        for (key, value) in metadata where !JSONLogLine.coreKeys.contains(key) { fields.append((key, value.description)) }
        for (key, value) in event.metadata ?? [:] where !JSONLogLine.coreKeys.contains(key) { fields.append((key, value.description)) }
        var line = JSONLogLine.render(fields)
        line.append(UInt8(ascii: "\n"))
        line.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Foundation.write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { if errno == EINTR { continue } else { return } }
                offset += written
            }
        }
    }
}

/// One log record as a JSON object (RFC 8259), rendered without Foundation's encoder (strings
/// quoted by `JSONText`).
enum JSONLogLine {
    /// The fields every record has, which metadata cannot replace.
    static let coreKeys: Set<String> = ["time", "level", "logger", "message"]

    /// `{"key":"value",…}` with the keys sorted (of two equal keys the later wins).
    static func render(_ fields: [(String, String)]) -> [UInt8] {
        // A stable sort keeps equal keys in their order; the last of each run is written.
        let sorted = fields.enumerated().sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }.map(\.element)
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(256)
        for (index, field) in sorted.enumerated() where index + 1 == sorted.count || sorted[index + 1].0 != field.0 {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            JSONText.append(quoted: field.0, to: &out)
            out.append(UInt8(ascii: ":"))
            JSONText.append(quoted: field.1, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// UTC with milliseconds, `2026-11-24T11:40:41.123Z` (RFC 3339).
    static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let fraction = Int(milliseconds % 1000)
        let millis = fraction < 10 ? "00\(fraction)" : fraction < 100 ? "0\(fraction)" : "\(fraction)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(millis)Z"
    }
}
